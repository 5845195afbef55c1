"""Property-based tests (hypothesis) of what the operator types or writes: the config loader
(the file, its tables, theme files, rule settings, unit names), the command line's numbers and
host ranges. No input raises anything but the documented error.

Derandomized with a small budget so ``make test`` stays fast and repeatable; for a longer hunt:
``DLTUI_HYPOTHESIS_EXAMPLES=5000 pytest tests/unit/test_properties.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
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


# Shapes a TOML parser meets with a RecursionError, a ValueError or a MemoryError: deep arrays
# and inline tables, long dotted keys and table headers, numbers of thousands of digits.
NUMBER_FORMS = [("", "1"), ("0x", "f"), ("0o", "7"), ("0b", "1"), ("-", "9"), ("1.", "0"), ("1e", "5"), ("", "1_")]
deep_shapes = st.one_of(
    st.integers(0, 600).map(lambda n: "[" * n + "]" * n),
    st.integers(0, 600).map(lambda n: "{a = " * n + "1" + "}" * n),
    st.integers(0, 300).map(lambda n: "[{a = " * n + "1" + "}]" * n),
    st.tuples(st.sampled_from(NUMBER_FORMS), st.integers(1, 6000)).map(lambda f: f[0][0] + f[0][1] * f[1]),
)
key_shapes = st.one_of(
    st.sampled_from(["interval", "theme", "rules.gpu_temp_high.warning", "x"]),
    st.integers(1, 1200).map(lambda n: "rules" + ".a" * n),
    st.integers(1, 1200).map(lambda n: ".".join(['"g"'] * n)),
)
toml_shapes = st.one_of(
    st.tuples(key_shapes, deep_shapes).map(lambda kv: f"{kv[0]} = {kv[1]}\n"),
    key_shapes.map(lambda k: f"[{k}]\nx = 1\n"),
    key_shapes.map(lambda k: f"[[{k}]]\nx = 1\n"),
)


@BUDGET
@given(toml_shapes)
def test_a_deep_long_or_huge_toml_shape_is_a_config_or_one_config_error(tmp_path_factory, text):
    """Config and theme files alike: never a traceback, whatever the parser would have met."""
    from dltui.ui.themes import ThemeError, load_theme

    path = tmp_path_factory.mktemp("cfg") / "x.toml"
    path.write_text(text)
    try:
        config.load(str(path))
    except ConfigError as exc:
        assert str(exc).startswith(f"{path}: ") and "\n" not in str(exc)
    try:
        load_theme(path)
    except ThemeError as exc:
        assert str(exc).startswith("x.toml: ") and "\n" not in str(exc)


# What looks like a shape inside a string or a comment nests nothing: the limits leave it alone.
hidden = st.one_of(deep_shapes, key_shapes, st.text(alphabet="[]{}.=,#\"'\\ \n0x9_", max_size=300))


@BUDGET
@given(hidden)
def test_shapes_inside_strings_and_comments_are_not_refused(text):
    flat = text.replace("\n", " ")
    basic = json.dumps(flat)  # a TOML basic string: JSON's escapes of \ and " are TOML's
    documents = {f"theme = {basic}\n": flat, f"# {flat}\ntheme = {basic} # {flat}\n": flat}
    if "'" not in flat:
        documents[f"theme = '{flat}'\n"] = flat
    if "'" not in text:
        documents[f"theme = '''\n{text}'''\n"] = text
    if '"' not in text and "\\" not in text:
        documents[f'theme = """\n{text}"""\n'] = text
    for document, value in documents.items():
        assert config.parse_toml(document)["theme"] == value


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


host_text = (
    st.text(alphabet="gpu0123456789[]-,:@.x", max_size=60)
    | st.text(alphabet="gpu01[]-:@.$()`;|&<> '\"\\{}\n\x1b", max_size=40)
    | st.text(max_size=300)
)
SHELL_CHARACTERS = set("'`\"$\\;&<>|(){}\n\x1b")


@BUDGET
@given(st.lists(host_text, max_size=4))
def test_host_ranges_expand_to_names_ssh_takes_or_are_one_host_spec_error(hosts):
    try:
        out = expand_ranges(hosts)
    except HostSpecError as exc:
        assert "\n" not in str(exc)
        return
    assert len(out) <= 2 * MAX_EXPANDED + 1
    for name in out[:50]:
        dest = parse_destination(name)  # what comes out is a destination, never refused later
        assert not SHELL_CHARACTERS & set(dest.host) and not dest.host.startswith("-")
