"""A node that reconnects keeps its probe's options: over a real sshd, with ``[probe] sysfs``
pointing at prometheus/procfs's captured ``class/infiniband`` tree, the HCA ports the probe
reads there are still reported after the node's sshd is killed and started again, also when the
sampling interval was changed in between (the reconnect's command line is then built anew)."""

from __future__ import annotations

import pytest

from dltui.core import status as st
from dltui.transport.ssh.options import SshOptions
from tests import sysfs_tree

from .streaming import Streaming

pytestmark = pytest.mark.sshd

# The capture's ports: hfi1_0 (Omni-Path), mlx4_0 with two ports, mlx5_0.
PORTS = ["hfi1_0:1", "mlx4_0:1", "mlx4_0:2", "mlx5_0:1"]


def _ports(s: Streaming, name: str = "gpu01") -> list[str]:
    sample = s.state.nodes[name].sample
    return sorted(p.name for p in sample.ib_ports) if sample is not None else []


async def test_hca_ports_under_probe_sysfs_survive_an_interval_change_and_a_reconnect(private_lab, tmp_path, use_home):
    use_home(private_lab.make_home(tmp_path / "home"))
    root = sysfs_tree.unpack(sysfs_tree.PROCFS, tmp_path / "host-sys")
    gpu01 = private_lab.nodes["gpu01"]
    async with Streaming(["gpu01"], SshOptions(sysfs=str(root)), interval_s=0.2) as s:
        await s.until(lambda f: _ports(s) == PORTS, "the tree's HCA ports from the first connect")
        s.fleet.set_interval(0.5)  # the dashboard's + key: the next connect's command line changes
        gpu01.kill()
        await s.until(lambda f: f.seen("gpu01", st.UNREACHABLE), "gpu01 unreachable")
        gpu01.start()
        await s.until(lambda f: f.hellos["gpu01"] == 2 and f.nodes["gpu01"].status == st.OK, "gpu01 back")
        await s.until_samples(["gpu01"], 3)
        assert _ports(s) == PORTS  # read under [probe] sysfs again, not under this machine's /sys
