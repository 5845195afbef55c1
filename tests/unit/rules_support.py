"""Shared pieces for the anomaly-rule tests: a fleet with an injected clock and the real
engine, sample builders, and samples built from the real ``nvidia-smi -q`` captures."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from dltui.config import Config
from dltui.core import status as st
from dltui.core.models import NodeFacts, Sample
from dltui.core.rules import build_engine
from dltui.core.state import FleetState, NodeState
from dltui.core.timeline import Alert
from dltui.node.probe.gpu_records import new_gpu_record
from dltui.node.probe.smi_text import parse

REPO = Path(__file__).resolve().parents[2]
TEXT_CAPTURES = REPO / "tests" / "fixtures" / "nvidia-smi-text"
H100_THROTTLED = "h100-80gb-hbm3-x8_535.161.08_q_hw-slowdown-active.txt"


def capture(name: str) -> tuple[dict, list[dict]]:
    """(facts, GPU records) of one real ``nvidia-smi -q`` capture."""
    return parse((TEXT_CAPTURES / name).read_text(encoding="utf-8"))


def busy_gpu(index: int = 0, **values) -> dict:
    """A healthy H100 under a steady training load; ``values`` override fields."""
    record = new_gpu_record(index)
    record.update(
        uuid=f"GPU-0000000{index}",
        name="NVIDIA H100 80GB HBM3",
        utilization_percent=97,
        memory_utilization_percent=40,
        utilization_samples_percent=[96, 97, 98, 99, 97, 96],
        utilization_sample_period_ms=166.7,
        memory_used_mib=60000,
        memory_total_mib=81559,
        temperature_c=62,
        memory_temperature_c=70,
        temperature_margin_c=28,
        power_w=610.0,
        power_limit_w=700.0,
        sm_clock_mhz=1980,
        memory_clock_mhz=2619,
        sm_clock_max_mhz=1980,
        memory_clock_max_mhz=2619,
        pstate=0,
        clock_event_reasons_mask=0,
        clock_event_reasons=[],
        clock_event_sw_power_cap_us=0,
        clock_event_sync_boost_us=0,
        clock_event_sw_thermal_us=0,
        clock_event_hw_thermal_us=0,
        clock_event_hw_power_brake_us=0,
        pcie_gen=5,
        pcie_width=16,
        pcie_max_gen=5,
        pcie_max_width=16,
        pcie_replay_count=0,
        ecc_corrected_volatile=0,
        ecc_uncorrected_volatile=0,
        ecc_corrected_aggregate=0,
        ecc_uncorrected_aggregate=0,
        remapped_rows_correctable=0,
        remapped_rows_uncorrectable=0,
        remapped_rows_pending=False,
        remapped_rows_failure=False,
        processes=[{"pid": 4242, "name": "python3", "gpu_memory_mib": 59000}],
    )
    record.update(values)
    return record


def host(**records) -> dict:
    """A calm host: records given replace the defaults (``pressure=None``: no PSI)."""
    sample = {
        "cpu": {
            "total_percent": 35.0, "user_percent": 30.0, "system_percent": 4.0, "iowait_percent": 1.0,
            "steal_percent": 0.0, "load_1": 20.0, "load_5": 20.0, "load_15": 20.0, "cores": [],
        },
        "memory": {
            "total_bytes": 1 << 40, "used_bytes": 1 << 39, "available_bytes": 1 << 39, "cached_bytes": 1 << 37,
            "buffers_bytes": 1 << 30, "shmem_bytes": 1 << 30, "swap_total_bytes": 0, "swap_used_bytes": 0,
        },
        "pressure": pressure(),
        "tasks": {"running": 12, "blocked_io": 0, "d_state_processes": 0},
        "disks": [disk("nvme0n1")],
        "filesystems": [filesystem("/"), filesystem("/dev/shm", fstype="tmpfs")],
        "networks": [{
            "name": "eth0", "rx_bytes_per_s": 2e6, "tx_bytes_per_s": 1e6, "rx_packets_per_s": 2000.0,
            "tx_packets_per_s": 1000.0, "rx_errors_total": 0, "tx_errors_total": 0, "rx_drops_total": 0, "tx_drops_total": 0,
        }],
    }
    sample.update(records)
    return sample


def pressure(io_some: float = 1.0, io_full: float = 0.5, cpu_some: float = 2.0, memory_some: float = 0.0, memory_full: float = 0.0) -> dict:
    return {
        "cpu_some_avg10_percent": cpu_some, "cpu_some_avg60_percent": cpu_some, "cpu_full_avg10_percent": 0.0,
        "cpu_full_avg60_percent": 0.0, "io_some_avg10_percent": io_some, "io_some_avg60_percent": io_some,
        "io_full_avg10_percent": io_full, "io_full_avg60_percent": io_full, "memory_some_avg10_percent": memory_some,
        "memory_some_avg60_percent": memory_some, "memory_full_avg10_percent": memory_full,
        "memory_full_avg60_percent": memory_full,
    }


def disk(name: str, **values) -> dict:
    record = {
        "name": name, "read_bytes_per_s": 2e8, "write_bytes_per_s": 1e7, "read_iops": 1500.0, "write_iops": 80.0,
        "busy_percent": 30.0, "queue_depth": 0.8, "await_ms": 0.4,
    }
    record.update(values)
    return record


def filesystem(mountpoint: str, used_percent: float = 40.0, total_bytes: int = 2 << 40, **values) -> dict:
    used = int(total_bytes * used_percent / 100)
    record = {
        "mountpoint": mountpoint, "device": "/dev/nvme0n1p2", "fstype": "ext4", "total_bytes": total_bytes,
        "used_bytes": used, "available_bytes": total_bytes - used, "used_percent": used_percent, "inodes_used_percent": 5.0,
    }
    record.update(values)
    return record


class Clock:
    def __init__(self, t: float = 1_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


class Rig:
    """Nodes in a ``FleetState`` with the real engine and a clock the test moves."""

    def __init__(
        self,
        names: tuple[str, ...] = ("gpu01",),
        cfg: Config | None = None,
        window_s: float | None = None,
        facts: NodeFacts | dict | None = None,
        inventory=None,
    ):
        self.clock = Clock()
        engine = build_engine(cfg, snapshot_window_s=window_s, inventory=inventory)
        self.fleet = FleetState(list(names), engine=engine, clock=self.clock)
        for name in names:
            self.hello(name, facts if facts is not None else NodeFacts(hostname=name, driver_version="535.161.08"))
            self.fleet.on_status(name, st.OK)

    def hello(self, name: str, facts: NodeFacts | dict) -> None:
        self.fleet.on_hello(name, facts if isinstance(facts, NodeFacts) else NodeFacts.from_dict(facts), 1.0)

    def feed(self, gpus: list[dict], name: str = "gpu01", **host_records) -> None:
        """One sample at the current time, then a redraw tick."""
        data = host(**host_records)
        data.update(time=self.clock.t, gpus=gpus)
        self.fleet.on_sample(name, Sample.from_dict(data))
        self.fleet.tick()

    def run(
        self,
        seconds: float,
        gpus: Callable[[float], list[dict]] | list[dict],
        name: str = "gpu01",
        hosts: Callable[[float], dict] | None = None,
        **host_records,
    ) -> None:
        """A sample every second for ``seconds``; ``gpus`` (and ``hosts``, host records) may
        depend on the seconds elapsed."""
        start = self.clock.t
        while self.clock.t - start < seconds:
            elapsed = self.clock.t - start
            records = dict(host_records, **(hosts(elapsed) if hosts else {}))
            self.feed(gpus(elapsed) if callable(gpus) else gpus, name, **records)
            self.clock.t += 1.0

    def node(self, name: str = "gpu01") -> NodeState:
        return self.fleet.nodes[name]

    def alerts(self, name: str = "gpu01") -> dict[tuple[str, int | None], Alert]:
        return dict(self.node(name).alerts)

    def alert(self, rule: str, gpu: int | None = 0, name: str = "gpu01") -> Alert | None:
        return self.node(name).alerts.get((rule, gpu))

    def timeline(self, rule: str, name: str = "gpu01") -> list[tuple[str, str]]:
        return [(e.kind, e.severity) for e in self.node(name).timeline if e.rule == rule]
