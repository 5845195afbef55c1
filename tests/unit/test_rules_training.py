"""unit_failed, unit_flapping, checkpoint_stale, and starvation ignoring checkpoint writes."""

from dltui.core.models import CheckpointSample, Sample, UnitSample
from dltui.core.rules import build_engine
from dltui.core.rules.training import outside_checkpoint_writes
from dltui.core.state import FleetState


def _unit(**kw):
    base = dict(
        name="dl_train.service",
        load_state="loaded",
        active_state="active",
        sub_state="running",
        result="success",
        restarts_total=0,
        main_pid=100,
        exec_main_status=0,
        invocation_id="a",
    )
    base.update(kw)
    return UnitSample(**base)


def _feed(fleet, t, units, checkpoint=None):
    fleet.on_sample("n", Sample(time=t, units=units, checkpoint=checkpoint))
    node = fleet.nodes["n"]
    return node


def _fleet():
    fleet = FleetState(["n"], engine=build_engine())
    fleet.on_status("n", "ok")
    return fleet


def test_unit_failed_is_critical_and_clears_when_active_again():
    fleet = _fleet()
    node = _feed(fleet, 1000, [_unit()])
    assert ("unit_failed", None) not in node.alerts
    node = _feed(
        fleet,
        1001,
        [_unit(active_state="failed", sub_state="failed", result="exit-code", exec_main_status=3)],
    )
    alert = node.alerts[("unit_failed", None)]
    assert (
        alert.severity == "critical"
        and "Result=exit-code" in alert.message
        and "exit status 3" in alert.message
    )
    node = _feed(fleet, 1002, [_unit()])
    assert ("unit_failed", None) not in node.alerts


def test_a_unit_that_does_not_exist_raises_nothing():
    fleet = _fleet()
    node = _feed(
        fleet,
        1000,
        [UnitSample(name="dl_train.service", load_state="not-found", active_state="inactive")],
    )
    assert not node.alerts


def test_unit_flapping_counts_rises_within_the_window():
    fleet = _fleet()
    node = _feed(
        fleet, 1000, [_unit(restarts_total=40)]
    )  # history before we watched does not count
    assert ("unit_flapping", None) not in node.alerts
    for i, t in enumerate((1010, 1020, 1030), start=1):
        node = _feed(fleet, t, [_unit(restarts_total=40 + i)])
    alert = node.alerts[("unit_flapping", None)]
    assert alert.severity == "warning" and "restarted itself 3 times" in alert.message


def test_slow_restarts_spread_beyond_the_window_do_not_flap():
    fleet = _fleet()
    for i, t in enumerate(range(1000, 1000 + 4 * 1000, 1000)):
        node = _feed(fleet, t, [_unit(restarts_total=i)])
    assert ("unit_flapping", None) not in node.alerts


def test_checkpoint_stale_only_while_the_unit_is_active():
    fleet = _fleet()
    old = CheckpointSample(
        glob="/ck/*.pt", newest_path="/ck/9.pt", newest_mtime=0.0, matched_files=3
    )
    node = _feed(fleet, 10000, [_unit(active_state="inactive")], old)
    assert ("checkpoint_stale", None) not in node.alerts
    node = _feed(fleet, 10001, [_unit()], old)
    node = _feed(fleet, 10062, [_unit()], old)  # for_s 60
    message = node.alerts[("checkpoint_stale", None)].message
    assert (
        message.startswith("newest checkpoint /ck/9.pt is ")
        and "old while dl_train.service is active" in message
    )


def test_dips_around_a_checkpoint_write_are_not_judged():
    values = [50.0] * 10 + [0.0] * 5 + [50.0] * 5  # 20 readings, 1 s apart, newest at t=119
    kept = outside_checkpoint_writes(values, 1.0, 119.0, [114.0], before_s=5, after_s=1)
    assert 0.0 not in kept and len(kept) == 13
    assert outside_checkpoint_writes(values, 1.0, 119.0, [10.0], 5, 1) == values


def test_starvation_ignores_dips_that_coincide_with_checkpoint_writes():
    from tests.unit.rules_support import Rig
    from tests.unit.test_starvation import PHASE_S, loader

    period, idle = 15, 5

    def checkpoint(elapsed):
        # each dip is the job saving: the checkpoint's mtime moves at the end of each pause
        k = int((elapsed - PHASE_S) // period)
        return {
            "checkpoint": {
                "glob": "/ck/*.pt",
                "newest_path": f"/ck/{k}.pt",
                "newest_mtime": 1_000_000.0 + PHASE_S + k * period + idle,
                "matched_files": k + 1,
            }
        }

    plain, saving = Rig(), Rig()
    plain.run(130, loader(period, idle, 6))
    saving.run(130, loader(period, idle, 6), hosts=checkpoint)
    assert plain.alert("loader_starvation") is not None
    assert saving.alert("loader_starvation") is None
