"""Connectivity rules, judged on redraw ticks: stale data and unreachable nodes."""

from dltui import snapshot
from dltui.core import status as st
from tests.unit.rules_support import Rig, busy_gpu


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
        "auth-failed: Permission denied (publickey) — check the user and key the SSH config gives this host (ssh -v HOST)",
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
