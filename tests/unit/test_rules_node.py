"""Connectivity rules, judged on redraw ticks: stale data and unreachable nodes."""

from dltui import report_text, snapshot
from dltui.core import status as st
from dltui.core.models import NodeEvent
from dltui.core.rules import engine as engine_module
from dltui.node.schema import interval_event
from tests.unit.rules_support import Rig, busy_gpu

real_quiet_until = engine_module._quiet_until


def test_data_older_than_three_intervals_is_stale_until_a_fresh_sample():
    rig = Rig()
    rig.run(5, [busy_gpu(0)])
    rig.clock.t += 2.0  # last sample 3 s ago: still fresh
    rig.fleet.tick()
    assert rig.alert("node_stale", None) is None
    rig.clock.t += 2.0
    rig.fleet.tick()
    alert = rig.alert("node_stale", None)
    assert (alert.severity, alert.message) == (
        "warning",
        "no sample for 5 s (expected every 1 s): values shown are stale — the node or its link may be overloaded",
    )
    rig.run(1, [busy_gpu(0)])
    assert rig.alert("node_stale", None) is None


def test_a_node_judged_quiet_is_judged_again_when_its_interval_shortens():
    """The engine skips a quiet node on redraws until its rules' limits pass; a new interval
    moves node_stale's limit, so the node is judged again at once."""
    rig = Rig()
    rig.run(5, [busy_gpu(0)])
    rig.clock.t += 0.5
    rig.fleet.tick()  # quiet for 3 intervals of 1 s
    rig.fleet.on_event("gpu01", NodeEvent.from_dict(interval_event(rig.clock.t, 0.1)))
    rig.clock.t += 0.5  # 1 s without a sample: stale at 0.1 s a sample
    rig.fleet.tick()
    assert rig.alert("node_stale", None).message.startswith("no sample for 2 s (expected every 0.1 s)")


def test_a_streaming_node_is_judged_once_per_limit_and_still_goes_stale_on_time(monkeypatch):
    """A newer sample only puts node_stale's limit (3 intervals) further off, so a quiet node
    streaming at 1 Hz is judged about once per 3 s, not on each sample; once the samples stop
    it is stale at the same tick as a node judged every time."""
    rig = Rig()
    judged = []
    monkeypatch.setattr(engine_module, "_quiet_until", lambda *a: judged.append(a) or real_quiet_until(*a))
    rig.run(12, [busy_gpu(0)])  # a sample and a redraw every second
    assert 3 <= len(judged) <= 5
    rig.clock.t += 2.0  # the last sample 3 s old: fresh
    rig.fleet.tick()
    assert rig.alert("node_stale", None) is None
    rig.clock.t += 0.5
    rig.fleet.tick()
    assert rig.alert("node_stale", None).message.startswith("no sample for 4 s (expected every 1 s)")


def test_connected_but_silent_for_15_s_is_unreachable():
    rig = Rig()
    rig.run(3, [busy_gpu(0)])
    rig.clock.t += 16.0
    rig.fleet.tick()
    assert rig.alert("node_unreachable", None).message == (
        "connected, but no sample for 17 s — the node may be hung or its link down; dltui keeps reconnecting"
    )


def test_a_transport_error_is_critical_with_its_status_word_and_clears_on_a_fresh_sample():
    rig = Rig()
    rig.run(3, [busy_gpu(0)])
    rig.fleet.on_status("gpu01", st.AUTH_FAILED, "Permission denied (publickey)")
    rig.fleet.tick()
    alert = rig.alert("node_unreachable", None)
    assert (alert.severity, alert.message) == (
        "critical",
        "auth-failed: Permission denied (publickey) — check the user and key the SSH config gives this host "
        "(ssh -v HOST); dltui keeps retrying",
    )
    assert rig.alert("node_stale", None) is None  # not connected: stale says nothing more
    assert snapshot.exit_code(rig.fleet) == 3
    rig.fleet.on_status("gpu01", st.OK)
    rig.run(1, [busy_gpu(0)])
    assert rig.alert("node_unreachable", None) is None


def test_a_node_that_never_connected_is_unreachable_too():
    rig = Rig(names=("gpu01", "gpu02"))
    rig.fleet.on_status("gpu02", st.TIMEOUT, "no answer within 10 s")
    rig.fleet.tick()
    assert rig.alert("node_unreachable", None, name="gpu02").message.startswith("timeout: no answer within 10 s — check the network path")
    assert rig.alerts("gpu01") == {}


def test_a_lost_node_is_one_timeline_line_and_its_return_another():
    """One event, one line: the loss is written once (no alert restating it, no retry plan),
    the retries under the same word only update the status line, the return says how long."""
    rig = Rig()
    rig.run(3, [busy_gpu(0)])
    start = len(rig.node().timeline)
    for attempt in (1, 2, 3):
        rig.fleet.on_status(
            "gpu01", st.UNREACHABLE,
            st.with_retry("jump host jump: lost the connection to 127.0.0.1:2222", f"at 16:06:5{attempt} (attempt {attempt})"),
        )
        rig.clock.t += 10
        rig.fleet.tick()
    assert rig.node().reason.endswith("retrying at 16:06:53 (attempt 3)")  # the status line keeps the plan
    assert rig.alert("node_unreachable", None).message == (
        "unreachable: jump host jump: lost the connection to 127.0.0.1:2222 for 20s"
        " — check the network path and the jump host; dltui keeps retrying"
    )
    rig.fleet.on_status("gpu01", st.OK)
    rig.run(1, [busy_gpu(0)])
    assert rig.alert("node_unreachable", None) is None
    assert [(e.kind, e.severity, e.message) for e in list(rig.node().timeline)[start:]] == [
        ("status", "critical", "unreachable: jump host jump: lost the connection to 127.0.0.1:2222"),
        ("status", "info", "ok: reconnected after 30s"),
    ]


def test_a_snapshot_of_an_unreachable_node_says_unknown_and_promises_no_retry():
    rig = Rig(names=("gpu01", "gpu02"), window_s=3)
    rig.run(3, [busy_gpu(0)])
    rig.fleet.on_status(
        "gpu02", st.UNREACHABLE, st.with_retry("127.0.0.1:1 refused the connection", "at 16:06:58 (attempt 2)")
    )
    rig.fleet.tick()
    text = report_text.render(rig.fleet)
    assert "gpu02: UNKNOWN — unreachable: 127.0.0.1:1 refused the connection — check the network path" in text
    assert "retrying" not in text and "CRITICAL" not in text
    (down,) = [n for n in snapshot.report(rig.fleet)["nodes"] if n["name"] == "gpu02"]
    assert (down["status"], down["error"], down["alerts"]) == ("unreachable", "127.0.0.1:1 refused the connection", [])
    assert snapshot.exit_code(rig.fleet) == 3
