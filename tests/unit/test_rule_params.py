"""Each rule's parameters are a declared type (a TypedDict beside the rule, what its check
reads ``p`` as, so mypy checks every ``p["key"]``), and that type names exactly the rule's
defaults and ``enabled``: a parameter added to one and not the other fails here."""

from __future__ import annotations

import typing

import pytest

from dltui.core.rules import RULES
from dltui.core.rules.settings import ENABLED

TYPED = [r for r in RULES if r.defaults]


@pytest.mark.parametrize("rule", TYPED, ids=[r.id for r in TYPED])
def test_a_rules_parameter_type_names_its_defaults(rule):
    hints = typing.get_type_hints(rule.check)
    params = hints.get("p")
    assert typing.is_typeddict(params), f"{rule.id}: its check reads p as {params!r}"
    fields = typing.get_type_hints(params)
    assert set(fields) == {*rule.defaults, ENABLED}
    for key, value in rule.defaults.items():
        wanted = fields[key]
        wanted = typing.get_origin(wanted) or wanted  # list[str] is checked as a list
        kinds = (bool,) if wanted is bool else (int, float) if wanted is float else (wanted,)
        assert isinstance(value, kinds), f"{rule.id}.{key} = {value!r} is not {wanted}"

