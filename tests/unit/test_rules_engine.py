"""The engine's shared mechanics: minimum duration, hysteresis, severity changes, N/A, the
snapshot window, and thresholds from the config (globally and per node group)."""

import copy
import pickle

import pytest

from dltui import snapshot
from dltui.config import Config, ConfigError, parse
from dltui.core.models import NodeFacts
from dltui.core.rules import RULES, build_engine
from dltui.core.rules.base import CLEAR, HOLD, NOT_REPORTED, Finding
from dltui.core.rules.condition import CHANGE, CLOSE, DROP, OPEN, UPDATE, Condition, Timing, advance
from tests.unit.rules_support import H100_THROTTLED, Rig, busy_gpu, capture


def hot(t, temp):
    """A loaded GPU without a T.Limit margin (core temperature is its only signal)."""
    return [busy_gpu(0, temperature_c=temp, temperature_margin_c=None)]


def test_every_rule_id_is_unique_and_documented():
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids)) == 53
    assert all(r.doc for r in RULES)


def test_the_tracker_opens_after_the_minimum_duration_and_closes_after_the_clear_time():
    timing = Timing((0.0, 30.0, 30.0), clear_s=60.0)
    cond, warn = Condition(), Finding("warning", "w")
    assert advance(cond, warn, 0.0, timing, 0.0, False) is None
    assert advance(cond, warn, 29.0, timing, 0.0, False) is None
    assert advance(cond, warn, 30.0, timing, 0.0, False) == OPEN and cond.severity == "warning"
    assert advance(cond, warn, 31.0, timing, 0.0, False) == UPDATE
    assert advance(cond, CLEAR, 40.0, timing, 0.0, False) is None
    assert advance(cond, HOLD, 70.0, timing, 0.0, False) is None  # the band restarts the clear time
    assert advance(cond, CLEAR, 80.0, timing, 0.0, False) is None
    assert advance(cond, CLEAR, 140.0, timing, 0.0, False) == CLOSE
    assert advance(Condition(), CLEAR, 0.0, timing, 0.0, False) == DROP


def test_severity_rises_at_once_and_falls_only_after_the_clear_time():
    timing = Timing((0.0, 0.0, 0.0), clear_s=60.0)
    cond = Condition()
    assert advance(cond, Finding("warning", "w"), 0.0, timing, 0.0, False) == OPEN
    assert advance(cond, Finding("critical", "c"), 1.0, timing, 0.0, False) == CHANGE and cond.severity == "critical"
    assert advance(cond, Finding("warning", "w"), 2.0, timing, 0.0, False) == UPDATE and cond.severity == "critical"
    assert advance(cond, Finding("warning", "w"), 62.0, timing, 0.0, False) == CHANGE and cond.severity == "warning"


def test_a_temperature_hovering_at_the_threshold_does_not_flap():
    """84 ↔ 86 °C every 10 s never holds 30 s: no alert. Once open, dips into the hysteresis
    band (83–85 °C) do not close it: one alert, opened once, never closed."""
    rig = Rig()
    rig.run(300, lambda t: hot(t, 86 if int(t) // 10 % 2 else 84))
    assert rig.alert("gpu_temp_high") is None
    rig.run(40, lambda t: hot(t, 87))
    rig.run(300, lambda t: hot(t, 87 if int(t) // 10 % 2 else 83))
    assert rig.alert("gpu_temp_high").severity == "warning"
    assert rig.timeline("gpu_temp_high") == [("alert-opened", "warning")]
    rig.run(70, lambda t: hot(t, 70))
    assert rig.alert("gpu_temp_high") is None
    assert rig.timeline("gpu_temp_high") == [("alert-opened", "warning"), ("alert-closed", "info")]


def test_not_reported_never_raises_and_never_clears():
    rig = Rig()
    rig.run(60, lambda t: hot(t, None))
    assert rig.alerts() == {}
    rig.run(40, lambda t: hot(t, 88))
    assert rig.alert("gpu_temp_high").severity == "warning"
    rig.run(600, lambda t: hot(t, None))  # the sensor stopped answering: we know nothing new
    assert rig.alert("gpu_temp_high").severity == "warning"


def test_the_alert_text_says_what_since_when_the_evidence_and_the_next_step():
    rig = Rig()
    rig.run(36, lambda t: hot(t, 91))
    alert = rig.alert("gpu_temp_high")
    assert alert.severity == "critical"
    assert alert.since == rig.clock.t - 36
    assert alert.message == (
        "core 91 °C ≥ 90 °C for 35s; this GPU reports no T.Limit margin, so core temperature is the only"
        " thermal signal — check airflow, fans and inlet temperature"
    )
    assert alert.evidence == {"temperature_c": 91, "threshold_c": 90, "temperature_margin_c": None}


def test_a_snapshot_reports_a_condition_held_for_its_whole_window_and_says_so():
    """The 8×H100 capture with HW slowdown and power brake active: a 3 s snapshot raises both
    on every GPU although hw_slowdown normally needs 3 s of samples, and exits 2."""
    facts, gpus = capture(H100_THROTTLED)
    rig = Rig(window_s=3, facts=facts)
    rig.run(3, gpus)
    alerts = rig.alerts()
    assert sorted(alerts) == sorted((rule, gpu) for gpu in range(8) for rule in ("hw_slowdown", "power_brake"))
    assert {a.severity for a in alerts.values()} == {"critical"}
    assert alerts[("hw_slowdown", 5)].message.startswith(
        "HW slowdown active (0x88: hw_slowdown, hw_power_brake_slowdown) for 2.0s; SM 86 of 1980 MHz, core 32 °C,"
    )
    assert "(seen throughout the 3 s snapshot; the rule normally needs 3 s) — external power brake: check PSU" in alerts[("hw_slowdown", 5)].message
    opened = next(e.message for e in rig.node().timeline if e.rule == "power_brake")
    assert "(seen throughout the 3 s snapshot; the rule normally needs 2 samples)" in opened
    assert "snapshot" not in alerts[("power_brake", 0)].message  # by the 2nd sample it was due anyway
    assert snapshot.exit_code(rig.fleet) == 2


def test_a_dashboard_engine_waits_for_the_minimum_duration_on_the_same_samples():
    facts, gpus = capture(H100_THROTTLED)
    rig = Rig(facts=facts)
    rig.run(3, gpus)  # samples at 0, 1, 2 s: power brake (2 samples) yes, HW slowdown (3 s) not yet
    assert {rule for rule, _ in rig.alerts()} == {"power_brake"}
    rig.run(1, gpus)
    assert {rule for rule, _ in rig.alerts()} == {"power_brake", "hw_slowdown"}


def test_a_snapshot_does_not_report_what_did_not_last_its_whole_window():
    rig = Rig(window_s=3)
    rig.run(3, lambda t: hot(t, 91 if t < 2 else 70))
    assert rig.alerts() == {}
    assert rig.timeline("gpu_temp_high") == [("alert-opened", "critical"), ("alert-closed", "info")]
    late = Rig(window_s=3)
    late.run(3, lambda t: hot(t, 91 if t >= 1 else 70))
    assert late.alerts() == {}


def test_a_snapshot_reports_a_hot_gpu_with_the_rules_usual_duration():
    rig = Rig(window_s=3)
    rig.run(3, lambda t: hot(t, 87))
    alert = rig.alert("gpu_temp_high")
    assert alert.severity == "warning"
    assert "(seen throughout the 3 s snapshot; the rule normally needs 30 s)" in alert.message
    assert snapshot.exit_code(rig.fleet) == 1


def test_thresholds_from_the_config_globally_and_per_group():
    cfg = parse(
        {
            "rules": {"gpu_temp_high": {"warning": 80}},
            "groups": {
                "hot-room": {"hosts": ["gpu1*"], "rules": {"gpu_temp_high": {"warning": 75, "for_s": 10}}},
                "quiet": {"hosts": ["gpu2*"], "rules": {"gpu_temp_high": {"enabled": False}}},
            },
        }
    )
    rig = Rig(names=("gpu01", "gpu11", "gpu21"), cfg=cfg)
    for name in ("gpu01", "gpu11", "gpu21"):
        rig.clock.t = 1_000_000.0
        rig.run(15, lambda t: [busy_gpu(0, temperature_c=82)], name=name)
    assert rig.alert("gpu_temp_high", name="gpu01") is None  # 80 °C after 30 s: not yet
    assert rig.alert("gpu_temp_high", name="gpu11").message.startswith("core 82 °C ≥ 75 °C for 10s")
    assert rig.alert("gpu_temp_high", name="gpu21") is None
    rig.clock.t = 1_000_015.0
    rig.run(20, lambda t: [busy_gpu(0, temperature_c=82)], name="gpu01")
    assert rig.alert("gpu_temp_high", name="gpu01").message.startswith("core 82 °C ≥ 80 °C for 30s")


@pytest.mark.parametrize(
    "table, words",
    [
        ({"rules": {"gpu_tmp_high": {"warning": 80}}}, "unknown rule 'gpu_tmp_high' (did you mean 'gpu_temp_high'?)"),
        ({"rules": {"gpu_temp_high": {"warn": 80}}}, "unknown parameter 'warn' (did you mean 'warning'?)"),
        ({"rules": {"gpu_temp_high": {"warning": "80"}}}, "[rules].gpu_temp_high.warning = '80': expected int"),
        ({"rules": {"gpu_temp_high": {"enabled": 1}}}, "expected bool"),
        ({"rules": {"gpu_temp_high": {"warning": float("nan")}}}, "expected a finite number"),
        ({"rules": {"gpu_temp_high": {"warning": 95}}}, "gpu_temp_high: warning (95) must be below critical (90)"),
        ({"rules": {"thermal_margin_low": {"critical": 12}}}, "critical (12) must be below warning (10)"),
        ({"groups": {"a": {"rules": {}}}}, "[groups.a] hosts is missing"),
        ({"groups": {"a": {"hosts": ["x"], "rule": {}}}}, "[groups.a] unknown key 'rule' (did you mean 'rules'?)"),
        ({"groups": {"a": {"hosts": ["x"], "rules": {"nope": {}}}}}, "[groups.a.rules]: unknown rule 'nope'"),
        (
            {"rules": {"gpu_temp_high": {"critical": 92}}, "groups": {"a": {"hosts": ["x"], "rules": {"gpu_temp_high": {"warning": 93}}}}},
            "[groups.a.rules].gpu_temp_high: warning (93) must be below critical (92)",
        ),
    ],
)
def test_a_config_typo_is_an_error_naming_it(table, words):
    with pytest.raises(ConfigError) as err:
        build_engine(parse(table))
    assert words in str(err.value)


def test_a_float_threshold_may_replace_an_integer_default():
    rig = Rig(cfg=Config(rules={"gpu_temp_high": {"warning": 80.5}}))
    rig.run(35, lambda t: [busy_gpu(0, temperature_c=81)])
    assert rig.alert("gpu_temp_high").message.startswith("core 81 °C ≥ 80.5 °C")


def test_severity_falls_from_critical_only_after_the_clear_time():
    rig = Rig()
    rig.run(15, lambda t: [busy_gpu(0, temperature_margin_c=2)])
    assert rig.alert("thermal_margin_low").severity == "critical"  # critical needs 10 s
    rig.run(55, lambda t: [busy_gpu(0, temperature_margin_c=8)])
    assert rig.alert("thermal_margin_low").severity == "critical"
    rig.run(10, lambda t: [busy_gpu(0, temperature_margin_c=8)])
    assert rig.alert("thermal_margin_low").severity == "warning"
    assert rig.timeline("thermal_margin_low") == [("alert-opened", "critical"), ("alert-changed", "warning")]


def test_facts_arriving_later_are_judged_without_a_sample():
    rig = Rig()
    rig.hello("gpu01", NodeFacts(hostname="gpu01", gpus=[]))
    rig.fleet.tick()
    assert rig.alerts() == {}


def test_rules_whose_signals_the_gpu_does_not_report_are_marked_na_not_fine():
    """A GeForce-like GPU: no HBM sensor, no T.Limit margin. Those rules say n/a, and the
    JSON report carries it; a signal that appears later takes the rule off the list."""
    from dltui.config import Config
    from dltui.core.models import GpuSample, Sample
    from dltui.core.rules import build_engine
    from dltui.core.state import FleetState
    from dltui.snapshot import report

    now = [1000.0]
    fleet = FleetState(["ws01"], engine=build_engine(Config()), clock=lambda: now[0])
    gpu = dict(index=0, utilization_percent=50.0, temperature_c=60.0, memory_temperature_c=None,
               temperature_margin_c=None, clock_event_reasons_mask=0)
    for step in range(7):  # the slow rules are judged every 5 s
        now[0] += 1.0
        fleet.on_sample("ws01", Sample(time=now[0], gpus=[GpuSample(**gpu)]))
    na = fleet.nodes["ws01"].rules_na[0]
    assert {"hbm_temp_high", "thermal_margin_low"} <= na
    assert "gpu_temp_high" not in na and "hw_slowdown" not in na
    assert set(report(fleet)["nodes"][0]["rules_na"]["0"]) >= {"hbm_temp_high", "thermal_margin_low"}
    for step in range(7):
        now[0] += 1.0
        fleet.on_sample("ws01", Sample(time=now[0], gpus=[GpuSample(**dict(gpu, temperature_margin_c=30.0))]))
    assert "thermal_margin_low" not in fleet.nodes["ws01"].rules_na[0]


def test_a_verdict_is_itself_after_a_copy_or_a_pickle():
    # the engine compares answers with `is`; a rule memory holding its last answer may be copied
    for verdict in (CLEAR, HOLD, NOT_REPORTED):
        assert copy.copy(verdict) is verdict
        assert copy.deepcopy({"last": [verdict]})["last"][0] is verdict
        assert pickle.loads(pickle.dumps(verdict)) is verdict
