"""Knowledge in one place: the engine and the UI ask a rule what it does (acknowledgeable,
cleared by a new boot, the events it consumes, the reading it concerns) instead of naming it;
values shared by several modules are written once."""

import re
from pathlib import Path

from dltui.core.rules import RULES
from dltui.core.rules.thermal import temperature_limits
from dltui.node import schema
from dltui.ui import levels

PACKAGE = Path(__file__).resolve().parents[2] / "dltui"
ASKERS = [PACKAGE / "core" / "rules" / "engine.py", *sorted((PACKAGE / "ui").rglob("*.py"))]


def test_the_engine_and_the_ui_name_no_rule():
    # "hw_slowdown" is also a clock-event reason (schema.CLOCK_EVENT_BITS) the GPU pane words
    reasons = {name for _, name in schema.CLOCK_EVENT_BITS}
    named = [
        f"{path.relative_to(PACKAGE)} names {rule.id!r}"
        for path in ASKERS
        for rule in RULES
        if rule.id not in reasons
        and re.search(r"[\"']%s[\"']" % re.escape(rule.id), path.read_text(encoding="utf-8"))
    ]
    assert named == []


def test_the_engine_and_the_ui_name_no_event_kind_a_rule_consumes():
    kinds = {kind for rule in RULES for kind in rule.consumes}
    assert kinds >= {"xid", "oom-kill"}
    named = [
        f"{path.relative_to(PACKAGE)} names {kind!r}"
        for path in ASKERS
        for kind in kinds
        if re.search(r"[\"']%s[\"']" % re.escape(kind), path.read_text(encoding="utf-8"))
    ]
    assert named == []


def test_rules_declare_their_behaviour():
    by_id = {rule.id: rule for rule in RULES}
    assert {r.id for r in RULES if r.acknowledgeable} == {"xid", "ecc_uncorrectable", "gpu_missing"}
    assert {r.id for r in RULES if r.cleared_by_new_boot} == {"xid"}
    assert by_id["xid"].consumes == ("xid",) and by_id["host_memory_low"].consumes == ("oom-kill",)
    for rule in RULES:
        assert bool(rule.consumes) == (rule.on_event is not None), rule.id


def test_ui_temperature_colours_are_the_rules_limits():
    """No copy of the rule defaults in the UI: change a default, the colour follows."""
    defaults = {r.id: r.defaults for r in RULES}
    assert (levels.DEFAULT.temp_warning_c, levels.DEFAULT.temp_critical_c) == (
        defaults["gpu_temp_high"]["warning"],
        defaults["gpu_temp_high"]["critical"],
    )
    assert levels.DEFAULT.margin_critical_c == defaults["thermal_margin_low"]["critical"]
    custom = levels.Thresholds.from_rules({"gpu_temp_high": {"warning": 70}})
    assert (custom.temp_warning_c, custom.temp_critical_c) == (70, defaults["gpu_temp_high"]["critical"])
    assert temperature_limits({}).margin_warning_c == defaults["thermal_margin_low"]["warning"]


def test_clock_event_bits_are_written_once():
    """Only the probe's schema spells the bit values; the parsers, rules and demo import them."""
    literal = re.compile(r"\b0x(?:1|2|4|8|10|20|40|80|100|200|400)\b\s*[,)}\n]")
    spelled = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "schema.py"
        and any(
            literal.search(line) and not line.lstrip().startswith("#") and '"' not in line
            for line in path.read_text(encoding="utf-8").splitlines()
        )
    ]
    assert spelled == []
    assert dict(schema.CLOCK_EVENT_BITS)[schema.HW_POWER_BRAKE_SLOWDOWN] == "hw_power_brake_slowdown"
