"""Rule parameters: each rule's defaults, overridden by the config globally and per node group.

    [rules.gpu_temp_high]               # every node
    warning = 83

    [groups.training]
    hosts = ["gpu0*", "gpu1?"]          # fnmatch globs on the node name as given
    [groups.training.rules.gpu_temp_high]
    warning = 80
    [groups.training.rules.persistence_off]
    enabled = false
    [groups.hgx]
    hosts = ["gpu*"]
    ib_rate_gbps = 400                  # a group key naming a rule parameter (RULE_GROUP_KEYS)

A node takes the defaults, then ``[rules.*]``, then every group whose ``hosts`` match its
name, in the order the groups appear in the file. An unknown rule or parameter, or a value
of the wrong type, is a config error: a typo must never silently keep a default.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Any

from dltui.config import Config, ConfigError, GroupSection
from dltui.config_schema import nearest

from .base import Rule

# Group keys that set the rule parameter of the same name, for every rule that has it: what a
# node group is built to (the HCA ports' rate), said once rather than per rule.
RULE_GROUP_KEYS = ("ib_rate_gbps",)

ENABLED = "enabled"  # every rule has it


class RuleSettings:
    def __init__(self, rules: Iterable[Rule], cfg: Config | None):
        self.rules = {r.id: r for r in rules}
        self._source = (cfg.source if cfg else None) or "config"
        self.overrides = self._checked_rules((cfg.rules if cfg else {}), "[rules]")
        self.groups: list[tuple[str, tuple[str, ...], dict[str, dict[str, Any]]]] = []
        for name, group in (cfg.groups if cfg else {}).items():
            self.groups.append(self._checked_group(name, group))
        self._cache: dict[tuple[str, ...], dict[str, dict[str, Any]]] = {}
        for rule in self.rules.values():  # every level a node can get, in its rule's order
            self._check_order(rule, self.overrides.get(rule.id, {}), "[rules]")
            for name, _, group_rules in self.groups:
                if rule.id in group_rules:
                    merged = {**self.overrides.get(rule.id, {}), **group_rules[rule.id]}
                    self._check_order(rule, merged, f"[groups.{name}.rules]")

    def groups_of(self, node: str) -> tuple[str, ...]:
        low = node.lower()
        return tuple(name for name, hosts, _ in self.groups if any(fnmatchcase(low, h.lower()) for h in hosts))

    def params(self, groups: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
        """Rule id -> parameters for a node in ``groups`` (shared, do not mutate)."""
        cached = self._cache.get(groups)
        if cached is None:
            cached = {}
            by_name = {name: rules for name, _, rules in self.groups}
            for rule_id, rule in self.rules.items():
                p = {ENABLED: True, **rule.defaults, **self.overrides.get(rule_id, {})}
                for group in groups:
                    p.update(by_name[group].get(rule_id, {}))
                cached[rule_id] = p
            self._cache[groups] = cached
        return cached

    def _checked_group(self, name: str, group: GroupSection) -> tuple[str, tuple[str, ...], dict[str, dict[str, Any]]]:
        # its keys and their types are the config schema's (dltui/config.py, GroupSection)
        rules = self._checked_rules(group.rules, f"[groups.{name}.rules]")
        for key in RULE_GROUP_KEYS:
            value = getattr(group, key)
            if value is None:
                continue
            for rule_id, rule in self.rules.items():
                if key in rule.defaults:  # the group's own rule table wins over its group key
                    rules[rule_id] = {key: value, **rules.get(rule_id, {})}
        return name, group.hosts, rules

    def _checked_rules(self, table: Any, where: str) -> dict[str, dict[str, Any]]:
        if not isinstance(table, dict):
            raise ConfigError(f"{self._source}: {where} must be a table")
        out = {}
        for rule_id, params in table.items():
            rule = self.rules.get(rule_id)
            if rule is None:
                raise ConfigError(f"{self._source}: {where}: unknown rule {rule_id!r} {nearest(rule_id, self.rules)}")
            if not isinstance(params, dict):
                raise ConfigError(f"{self._source}: {where}.{rule_id} must be a table")
            allowed = {ENABLED: True, **rule.defaults}
            for key, value in params.items():
                if key not in allowed:
                    raise ConfigError(
                        f"{self._source}: {where}.{rule_id}: unknown parameter {key!r} {nearest(key, allowed)}"
                    )
                if not _same_kind(value, allowed[key]):
                    raise ConfigError(
                        f"{self._source}: {where}.{rule_id}.{key} = {value!r}: expected {type(allowed[key]).__name__}"
                    )
                if not isinstance(value, bool) and isinstance(value, (int, float)) and not (
                    math.isfinite(value) and value >= 0
                ):
                    raise ConfigError(
                        f"{self._source}: {where}.{rule_id}.{key} = {value!r}: expected a finite number of at least 0"
                    )
            out[rule_id] = dict(params)
        return out

    def _check_order(self, rule: Rule, given: dict[str, Any], where: str) -> None:
        """The levels a rule orders (``Rule.ascending``: a warning below its critical) must
        rise in that order, with what is given over the defaults."""
        if not rule.ascending or not any(p in given for p in rule.ascending):
            return
        values = [(p, given.get(p, rule.defaults[p])) for p in rule.ascending]
        for (low, a), (high, b) in zip(values, values[1:], strict=False):
            if not a < b:
                raise ConfigError(
                    f"{self._source}: {where}.{rule.id}: {low} ({a}) must be below {high} ({b})"
                )


def _same_kind(value: Any, default: Any) -> bool:
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float))
    return isinstance(value, type(default))
