"""Network trouble that loopback cannot show: a node whose link goes silent, a slow link."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path

import pytest

from dltui.core import status as st

from .conftest import require
from .netns import NetnsLab, can_build
from .sshd import SSHD
from .streaming import Streaming

pytestmark = [pytest.mark.sshd, pytest.mark.netns]

BOTH = ["gpu01", "gpu02"]


@pytest.fixture
def netns_lab(tmp_path, use_home):
    require(os.path.exists(SSHD), f"{SSHD} is missing: install openssh-server")
    why_not = can_build()
    require(why_not is None, why_not or "")
    lab = NetnsLab(tmp_path / "lab")
    try:
        lab.build()
        use_home(lab.ssh.make_home(tmp_path / "home"))
        yield lab
    finally:
        lab.destroy()


def test_nodes_are_reachable_only_through_the_jump(netns_lab):
    async def scenario():
        async with Streaming(BOTH) as s:
            await s.until_samples(BOTH, 2)
            return {n.name: n.status for n in s.state}

    assert netns_lab.run_in("laptop", scenario) == {"gpu01": st.OK, "gpu02": st.OK}
    with pytest.raises(OSError) as direct:  # without the jump there is no route
        netns_lab.run_in("laptop", lambda: asyncio.open_connection("10.77.0.2", 22))
    assert direct.value.errno == errno.ENETUNREACH


def test_node_link_down_is_caught_by_keepalive_and_the_node_recovers(netns_lab):
    async def scenario():
        async with Streaming(BOTH) as s:
            await s.until_samples(BOTH, 2)
            netns_lab.set_link("gpu01", up=False)
            await s.until(lambda f: f.nodes["gpu01"].status != st.OK, "gpu01 silent")
            down = s.state.nodes["gpu01"]
            assert down.status == st.RECONNECTING
            assert down.reason.startswith(
                "10.77.0.2:22 stopped answering keepalives (network down or node hung); retrying at "
            )
            await s.until_samples(["gpu02"], 3)  # the jump and the other node are fine
            assert s.state.nodes["gpu02"].status == st.OK
            netns_lab.set_link("gpu01", up=True)
            await s.until(lambda f: f.nodes["gpu01"].status == st.OK, "gpu01 back")
            await s.until_samples(["gpu01"], 2)
            return s.state.hellos["gpu01"]

    assert netns_lab.run_in("laptop", scenario) == 2


def test_a_slow_node_does_not_hold_back_the_others(netns_lab):
    """gpu02's link is throttled (tc tbf) while both share one connection to the jump."""
    # Keepalive replies queue behind the throttled samples: with the lab's 1 s x 2 a node this
    # slow can look dead. This test is about a slow node, so give keepalive room.
    netns_lab.ssh.keepalive_s = 10
    Path(os.environ["HOME"], ".ssh", "config").write_text(netns_lab.ssh.ssh_config())

    async def scenario():
        async with Streaming(BOTH) as s:
            await s.until_samples(BOTH, 2)
            start = {n: s.state.samples(n) for n in BOTH}
            netns_lab.throttle("gpu02", "2kbit")
            await s.until_samples(["gpu01"], 20)
            throttled = {n: s.state.samples(n) - start[n] for n in BOTH}
            netns_lab.unthrottle("gpu02")
            # nothing was lost: every sample gpu02 produced meanwhile arrives afterwards
            await s.until(lambda f: f.samples("gpu02") - start["gpu02"] >= throttled["gpu01"], "gpu02 to catch up")
            return throttled, {n.name: n.status for n in s.state}, s.state.hellos

    throttled, statuses, hellos = netns_lab.run_in("laptop", scenario)
    assert throttled["gpu01"] >= 20
    assert throttled["gpu02"] < throttled["gpu01"]
    assert statuses == {"gpu01": st.OK, "gpu02": st.OK}
    assert hellos == {"gpu01": 1, "gpu02": 1}  # slow is not dead: no reconnect
