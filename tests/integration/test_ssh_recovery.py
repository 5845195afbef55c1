"""Servers that crash and come back: every node says why it is down, and all recover."""

from __future__ import annotations

import pytest

from dltui.core import status as st

from .streaming import Streaming, tcp_connections_to

pytestmark = pytest.mark.sshd

BOTH = ["gpu01", "gpu02"]


async def test_node_crash_is_reported_and_the_node_recovers_after_restart(private_lab, tmp_path, use_home):
    use_home(private_lab.make_home(tmp_path))
    gpu01 = private_lab.nodes["gpu01"]
    async with Streaming(BOTH) as s:
        await s.until_samples(BOTH, 2)
        gpu01.kill()
        await s.until(lambda f: f.seen("gpu01", st.UNREACHABLE), "gpu01 unreachable")
        await s.until_samples(["gpu02"], 3)  # the rest of the fleet keeps streaming
        assert s.state.nodes["gpu02"].status == st.OK
        lost = s.state.seen("gpu01", st.RECONNECTING)[0]
        assert lost.startswith(f"lost the connection to 127.0.0.1:{gpu01.port}; retrying at ")
        assert lost.endswith(" (attempt 1)")
        refused = s.state.seen("gpu01", st.UNREACHABLE)[0]
        assert refused.startswith(f"the jump host cannot reach 127.0.0.1:{gpu01.port}: Connection refused; retrying at ")
        assert refused.endswith(" (attempt 2)")
        gpu01.start()
        await s.until(lambda f: f.nodes["gpu01"].status == st.OK, "gpu01 back")
        await s.until_samples(["gpu01"], 2)
        assert s.state.hellos["gpu01"] == 2  # facts re-read from the new session
        assert s.state.nodes["gpu01"].reason is None
        assert tcp_connections_to(private_lab.nodes["jump"].port) == 1


async def test_jump_crash_makes_every_node_unreachable_via_jump_and_all_recover(private_lab, tmp_path, use_home):
    use_home(private_lab.make_home(tmp_path))
    jump = private_lab.nodes["jump"]
    async with Streaming(BOTH) as s:
        await s.until_samples(BOTH, 2)
        jump.kill()
        await s.until(lambda f: all(len(f.seen(n, st.UNREACHABLE)) >= 2 for n in BOTH), "two failed tries each")
        for name in BOTH:
            lost, refused = s.state.seen(name, st.UNREACHABLE)[:2]
            assert lost.startswith(f"jump host jump: lost the connection to 127.0.0.1:{jump.port}; retrying at ")
            assert refused.startswith(
                f"jump host jump: 127.0.0.1:{jump.port} refused the connection (sshd not running?); retrying at "
            )
            assert refused.endswith(" (attempt 2)")
            assert s.state.nodes[name].alerts[("node_unreachable", None)].severity == "critical"
        jump.start()
        await s.until(lambda f: all(n.status == st.OK for n in f), "both nodes back")
        await s.until_samples(BOTH, 2)
        assert [s.state.hellos[n] for n in BOTH] == [2, 2]
        assert tcp_connections_to(jump.port) == 1  # shared again after the recovery
        for name in BOTH:  # one event, one line: the loss once (not per retry, not as an alert too), the return
            node = s.state.nodes[name]
            lines = [(e.kind, e.message) for e in node.timeline if e.kind == "status" or e.rule == "node_unreachable"]
            assert lines[1:] == [
                ("status", f"unreachable: jump host jump: lost the connection to 127.0.0.1:{jump.port}"),
                ("status", lines[2][1]),
            ]
            assert lines[2][1].startswith("ok: reconnected after ")
            assert ("node_unreachable", None) not in node.alerts
