"""Streaming the real probe from real sshd nodes behind a jump host."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import psutil
import pytest

from dltui.core import status as st
from dltui.transport.ssh.options import SshOptions

from .sshd import REPO, client_env
from .streaming import Streaming, tcp_connections_to

pytestmark = pytest.mark.sshd


async def test_two_nodes_stream_through_one_jump_connection_fake_smi(shared_lab, tmp_path, use_home):
    use_home(shared_lab.make_home(tmp_path))
    jump, gpu01, gpu02 = (shared_lab.nodes[n] for n in ("jump", "gpu01", "gpu02"))
    async with Streaming(["gpu01", "gpu02"]) as s:
        await s.until(lambda f: all(n.status == st.OK for n in f), "both nodes ok")
        await s.until_samples(["gpu01", "gpu02"], 3)
        assert tcp_connections_to(jump.port) == 1  # shared by both nodes
        assert tcp_connections_to(gpu01.port) == tcp_connections_to(gpu02.port) == 0  # only via the jump
        for name in ("gpu01", "gpu02"):
            node = s.state.nodes[name]
            assert node.reason is None
            assert node.facts.hostname == os.uname().nodename  # the real probe on the (loopback) node
            assert node.interval_s == 0.2
            gpus = node.sample.gpus
            assert [g.name for g in gpus] == ["NVIDIA H100 80GB HBM3"]
            assert gpus[0].memory_total_mib == 81559
            assert node.sample.memory.total_bytes == psutil.virtual_memory().total
            assert node.malformed_lines == 0
        assert s.state.seen("gpu01", st.CONNECTING) == [None]


async def test_nodes_sample_at_the_same_wall_clock_instants(shared_lab, tmp_path, use_home):
    """After its first sample every probe samples on whole seconds (interval 1 s): the two
    nodes' samples are the same instants, whatever moment each connected at."""
    use_home(shared_lab.make_home(tmp_path))
    async with Streaming(["gpu01", "gpu02"], interval_s=1.0) as s:
        await s.until_samples(["gpu01", "gpu02"], 5)
        times = {name: s.state.nodes[name].history.time.values()[1:] for name in ("gpu01", "gpu02")}
    for name, stamps in times.items():
        # a tick wakes within a few ms of its second; the median of the offsets stays there
        # on a loaded machine where one wake-up may come late (unaligned, the median of 4
        # random offsets lands within 100 ms of a second about 1 time in 20)
        offsets = sorted(abs(t - round(t)) for t in stamps)
        assert offsets[len(offsets) // 2] < 0.1, (name, stamps)
    assert len({round(t) for t in times["gpu01"]} & {round(t) for t in times["gpu02"]}) >= 3


async def test_quitting_leaves_no_probe_process_on_the_nodes(shared_lab, tmp_path, use_home):
    use_home(shared_lab.make_home(tmp_path))
    nodes = [shared_lab.nodes["gpu01"], shared_lab.nodes["gpu02"]]
    s = Streaming(["gpu01", "gpu02"])
    async with s:
        await s.until_samples(["gpu01", "gpu02"], 1)
        assert [len(n.probe_processes()) for n in nodes] == [1, 1]
    await s.until(lambda f: not any(n.probe_processes() for n in nodes), "the probes to exit")
    assert [n.probe_processes() for n in nodes] == [[], []]


async def test_ssh_style_destinations_user_host_port_dash_j_and_dash_i(shared_lab, tmp_path, use_home):
    """``user@host:port`` with ``-J jump`` and the key given only with ``-i``, as ssh takes them."""
    home = shared_lab.make_home(tmp_path / "home")
    key = home / ".ssh" / "id_ed25519"
    moved = tmp_path / "only-with-dash-i"
    key.rename(moved)
    use_home(home)
    gpu01 = shared_lab.nodes["gpu01"]
    dest = f"{shared_lab.user}@127.0.0.1:{gpu01.port}"
    options = SshOptions(jump="jump", identity=(str(moved),))
    async with Streaming([dest], options) as s:
        await s.until_samples([dest], 2)
        assert s.state.nodes[dest].status == st.OK
        assert tcp_connections_to(shared_lab.nodes["jump"].port) == 1


async def test_two_jump_chain_from_the_config_and_from_dash_j(shared_lab, tmp_path, use_home):
    """``gpu-deep`` is behind ``inner`` which is itself behind ``jump``; ``-J jump,inner``
    builds the same chain for a node whose own ProxyJump says otherwise."""
    home = use_home(shared_lab.make_home(tmp_path))
    gpu02 = shared_lab.nodes["gpu02"]
    with open(home / ".ssh" / "config", "a") as cfg:
        cfg.write(  # "inner" is gpu02's sshd, used as a second bastion
            f"\nHost inner\n  HostName 127.0.0.1\n  Port {gpu02.port}\n  ProxyJump jump\n"
            f"Host gpu-deep\n  HostName 127.0.0.1\n  Port {shared_lab.nodes['gpu01'].port}\n  ProxyJump inner\n"
        )
    async with Streaming(["gpu-deep"]) as s:
        await s.until_samples(["gpu-deep"], 2)
        assert s.state.nodes["gpu-deep"].status == st.OK
        assert tcp_connections_to(shared_lab.nodes["jump"].port) == 1
    async with Streaming(["gpu01"], SshOptions(jump="jump,inner")) as s:
        await s.until_samples(["gpu01"], 2)
        assert s.state.nodes["gpu01"].status == st.OK


def run_snapshot(home, *hosts):
    return subprocess.run(
        [sys.executable, "-m", "dltui", "snapshot", *hosts, "--json", "--seconds", "1.5", "--interval", "0.25"],
        cwd=REPO,
        env=client_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_snapshot_json_from_two_nodes_fake_smi(shared_lab, tmp_path):
    done = run_snapshot(shared_lab.make_home(tmp_path), "gpu01", "gpu02")
    assert done.returncode == 0, done.stderr + done.stdout
    report = json.loads(done.stdout)
    assert report["version"] == 1
    assert [n["name"] for n in report["nodes"]] == ["gpu01", "gpu02"]
    for node in report["nodes"]:
        assert (node["status"], node["error"]) == ("ok", None)
        assert node["facts"]["hostname"] == os.uname().nodename
        gpu = node["sample"]["gpus"][0]
        assert (gpu["name"], gpu["memory_total_mib"]) == ("NVIDIA H100 80GB HBM3", 81559)
        assert node["malformed_lines"] == 0


def test_snapshot_waits_for_a_node_still_starting_its_probe(shared_lab, tmp_path):
    """slowstart's python3 needs 3 s to start: longer than the 1.5 s window. The snapshot
    waits for it (as for a node slow to connect) instead of reporting it silent."""
    done = run_snapshot(shared_lab.make_home(tmp_path), "slowstart")
    assert done.returncode == 0, done.stderr + done.stdout
    (node,) = json.loads(done.stdout)["nodes"]
    assert (node["status"], node["error"]) == ("ok", None)
    assert node["sample"]["cpu"]["total_percent"] is not None  # two samples: rates too


def test_snapshot_exits_3_when_a_node_is_down(shared_lab, tmp_path):
    home = shared_lab.make_home(tmp_path)
    with open(home / ".ssh" / "config", "a") as cfg:  # a node behind the jump with no sshd
        cfg.write("\nHost gpu09\n  HostName 127.0.0.1\n  Port 1\n  ProxyJump jump\n")
    done = run_snapshot(home, "gpu01", "gpu09")
    assert done.returncode == 3, done.stderr + done.stdout
    nodes = {n["name"]: n for n in json.loads(done.stdout)["nodes"]}
    assert nodes["gpu01"]["status"] == "ok"
    assert nodes["gpu09"]["status"] == "unreachable"
    # what failed, without the plan to retry (the snapshot stops trying when it ends)
    assert nodes["gpu09"]["error"] == "the jump host cannot reach 127.0.0.1:1: Connection refused"
    assert nodes["gpu09"]["alerts"] == []  # UNKNOWN: its status says so, not a critical finding
    assert nodes["gpu09"]["sample"] is None


async def test_the_running_probe_is_told_a_new_interval_not_restarted_fake_smi(shared_lab, tmp_path, use_home):
    """The dashboard's + / -: the interval goes down the probe's stdin; the same probe process
    takes it at its next tick and says so (an ``interval`` event), and the node's interval
    follows (stale-node timing, the header)."""
    use_home(shared_lab.make_home(tmp_path))
    gpu01 = shared_lab.nodes["gpu01"]
    async with Streaming(["gpu01"], interval_s=0.2) as s:
        await s.until_samples(["gpu01"], 2)
        [probe] = gpu01.probe_processes()
        s.fleet.set_interval(0.5)
        await s.until(lambda f: f.nodes["gpu01"].interval_s == 0.5, "the node to take 0.5 s")
        await s.until_samples(["gpu01"], 2)
        assert gpu01.probe_processes() == [probe]  # told, not restarted
        told = [e for e in s.state.nodes["gpu01"].timeline if e.kind == "interval"]
        assert [e.message for e in told] == ["sampling every 0.5 s"]
        assert s.fleet.links["gpu01"].command.split("--interval ")[1].startswith("0.5")  # a reconnect keeps it
