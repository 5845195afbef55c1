"""Property-based tests (hypothesis) of what the operator types or writes: the config loader
(the file, its tables, theme files, rule settings, unit names), the command line's numbers and
host ranges. No input raises anything but the documented error.

Derandomized with a small budget so ``make test`` stays fast and repeatable; for a longer hunt:
``DLTUI_HYPOTHESIS_EXAMPLES=5000 pytest tests/unit/test_properties.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dltui import config, wiring
from dltui.config import CommandLine, Config, ConfigError, ThemeFile
from dltui.config_schema import build, keys, option
from dltui.transport.hostspec import MAX_EXPANDED, HostSpecError, expand_ranges, parse_destination

BUDGET = settings(
    derandomize=True,
    max_examples=int(os.environ.get("DLTUI_HYPOTHESIS_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# Words the schema knows (and near misses), so generated tables reach deep, not only fail fast.
KNOWN = sorted(
    {k.name for cls in (Config, config.SshSection, config.ActionsSection, config.BurninSection,
                        config.GroupSection, ThemeFile) for k in keys(cls)}
    | {"gpu_temp_high", "thermal_margin_low", "loader_starvation", "warning", "critical", "enabled",
       "hosts", "units", "checkpoint", "primary", "intervall", "sssh"}
)
scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["dl_train.service", "a;reboot", "gpu*", "#ffffff", "sudo", "polkit", "", "smoke"]),
)
names = st.one_of(st.sampled_from(KNOWN), st.text(max_size=12))
toml_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(names, inner, max_size=5)),
    max_leaves=25,
)
tables = st.dictionaries(names, toml_values, max_size=6)


@BUDGET
@given(tables)
def test_the_config_loader_answers_a_config_or_one_config_error(data):
    try:
        cfg = config.parse(data, "c.toml")
        wiring._check_rules_and_units(cfg)  # rules and unit names: checked by their owners
    except ConfigError as exc:
        assert str(exc).startswith("c.toml") and "\n" not in str(exc)
        return
    assert 0.1 <= cfg.interval_s <= 3600 and isinstance(cfg.read_only, bool)
    for section in (cfg.ssh, cfg.actions, cfg.burnin):
        for k in keys(type(section)):
            value = getattr(section, k.attr)
            if isinstance(value, float):
                assert math.isfinite(value) and (k.min is None or value >= k.min) and (k.max is None or value <= k.max)


@BUDGET
@given(st.text(max_size=200))
def test_any_config_file_text_is_a_config_or_one_config_error(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("cfg") / "config.toml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    try:
        config.load(str(path))
    except ConfigError as exc:
        assert str(exc).startswith(str(path))


@BUDGET
@given(tables)
def test_a_theme_file_is_a_theme_or_one_config_error(data):
    try:
        theme = build(ThemeFile, data, "x.toml:")
    except ConfigError as exc:
        assert str(exc).startswith("x.toml")
        return
    assert isinstance(theme.primary, str) and dataclasses.is_dataclass(theme)


@BUDGET
@given(st.sampled_from([k.attr for k in keys(CommandLine)] + ["interval_s"]), st.text(max_size=30))
def test_a_number_on_the_command_line_is_in_its_range_or_a_usage_error(attr, text):
    cls = Config if attr == "interval_s" else CommandLine
    (k,) = (k for k in keys(cls) if k.attr == attr)
    try:
        value = option(cls, attr)(text)
    except argparse.ArgumentTypeError:
        return
    assert math.isfinite(value) and k.min <= value <= k.max


host_text = st.text(alphabet="gpu0123456789[]-,:@.x", max_size=60) | st.text(max_size=300)


@BUDGET
@given(st.lists(host_text, max_size=4))
def test_host_ranges_expand_or_are_one_host_spec_error(hosts):
    try:
        out = expand_ranges(hosts)
    except HostSpecError:
        return
    assert len(out) <= 2 * MAX_EXPANDED + 1
    for name in out[:50]:
        try:
            parse_destination(name)
        except HostSpecError:
            pass
