"""Data pipeline and job rules: a starving data loader, a hung job,
kernels spinning without work. A periodic 0 % with memory held is starvation; a sustained
0 % is a hang."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, TypedDict

from ..models import GpuSample
from ..timeline import CRITICAL, WARNING
from ..vendors import vendor
from .base import CLEAR, GPU, HOLD, NOT_REPORTED, Finding, Rule
from .causes import Cause, explain, track_disks
from .memory import GpuMemory
from .starvation import detect
from .training import checkpoint_writes, outside_checkpoint_writes

_ACTIONS = {
    "io": "the loader waits on storage: check the dataset disk, stage the data on local NVMe, raise prefetching",
    "cpu": "the loader is CPU-bound: more DataLoader workers, cheaper decoding or augmentation",
    "memory": "the page cache is thrashing: add RAM or shrink the working set",
    "network": "network storage is too slow: cache the dataset locally",
    "unknown": "host signals show no pressure: profile the input pipeline (PyTorch profiler)",
}


class _UtilWindow:
    """The recent utilisation readings of one GPU, at one rate: sub-second, or 1 Hz."""

    __slots__ = ("period_ms", "period_s", "values", "shares", "since", "next_eval")

    def __init__(self, period_ms: float | None, period_s: float, window_s: float, now: float):
        self.period_ms = period_ms  # as the reading gave it: the fast path compares it as is
        self.period_s = period_s
        self.values: deque[float] = deque(maxlen=max(2, round(window_s / period_s)))
        self.shares: deque[float] = deque(maxlen=max(2, round(window_s)))  # zero share per sample
        self.since = now
        self.next_eval = now


def _window(g: GpuSample, mem: GpuMemory, p: LoaderStarvationParams) -> _UtilWindow | None:
    """Feed this reading into the GPU's window (None without any utilisation reading)."""
    subs = g.utilization_samples_percent
    win = mem.rule_state.get("loader_starvation")
    if subs:
        if win is None or win.period_ms is None or g.utilization_sample_period_ms != win.period_ms:
            # Not the common case (the same sample period as last time): a new rate, a new window.
            period_s = (g.utilization_sample_period_ms or mem.node.interval_s * 1000 / len(subs)) / 1000
            if win is None or abs(win.period_s - period_s) > 0.25 * win.period_s:
                win = mem.rule_state["loader_starvation"] = _UtilWindow(
                    g.utilization_sample_period_ms, period_s, p["window_s"], mem.now
                )
    elif g.utilization_percent is not None:
        subs = [g.utilization_percent]
        if win is None or win.period_s != mem.node.interval_s:
            win = mem.rule_state["loader_starvation"] = _UtilWindow(
                None, mem.node.interval_s, p["window_1hz_s"], mem.now
            )
    else:
        return None
    win.values.extend(subs)
    win.shares.append(subs.count(0) / len(subs))
    return win


def loader_starvation(g: GpuSample, mem: GpuMemory, p: LoaderStarvationParams) -> object:
    win = _window(g, mem, p)
    if win is None:
        return NOT_REPORTED  # no utilisation at all (a Prometheus without DCGM_FI_DEV_GPU_UTIL)
    node, now = mem.node, mem.now
    if not node.window:  # watching: judge every every_s, after the warm-up
        if now < win.next_eval:
            return None
        win.next_eval = now + p["every_s"]
        assert node.sample is not None  # rules run on a sample
        track_disks(node, node.sample)
        if now - win.since < p["warmup_s"]:
            return None
    elif len(win.values) * win.period_s < p["snapshot_min_s"]:
        return None  # a snapshot judges its whole window, once there is enough of it
    used = g.memory_used_percent
    if used is None:
        return None
    if used < p["memory_used"]:
        return CLEAR  # no job holds this GPU
    values: Sequence[float] = win.values
    writes = checkpoint_writes(node)
    if writes and node.sample is not None:  # a pause to save a checkpoint is not starvation
        values = outside_checkpoint_writes(
            values, win.period_s, node.sample.time, writes, p["checkpoint_before_s"], p["checkpoint_after_s"]
        )
    elif win.values.count(0.0) < p["clear_below"] * len(win.values):
        return CLEAR  # detect's answer for a GPU that is not starving, without copying its window
    found = detect(values, win.period_s)
    if found.zero_fraction < p["clear_below"]:
        return CLEAR
    if found.zero_fraction < p["warning"]:
        return HOLD
    if found.dips < p["min_dips"]:
        # Watching, a long pause is not a pattern. A snapshot's short window may simply not
        # have room for the dips yet: undecided, not a contradiction.
        return None if node.window else HOLD
    sub_second = win.period_s < node.interval_s
    cause = _cause(mem, win, p)
    detail = (
        f"likely cause {cause.label}"
        + (f" ({cause.reason})" if cause.reason else "")
        + f"; {cause.evidence}"
    )
    return Finding(
        CRITICAL if found.zero_fraction >= p["critical"] else WARNING,
        found.words() + ("" if sub_second else f" ({_coarse(win.period_s)})"),
        _ACTIONS[cause.label],
        detail,
        {
            "zero_fraction": round(found.zero_fraction, 3),
            "dips": found.dips,
            "period_s": found.period_s,
            "window_s": found.window_s,
            "sub_second": sub_second,
            "cause": cause.label,
            **cause.numbers,
        },
    )


def _coarse(period_s: float) -> str:
    """Says the signal was coarse: 1 Hz (the nvidia-smi fallback) or slower (a Prometheus
    source reads one utilisation value per refresh)."""
    return "1 Hz" if abs(period_s - 1.0) < 0.05 else f"one reading every {period_s:g} s"


def _cause(mem: GpuMemory, win: _UtilWindow, p: LoaderStarvationParams) -> Cause:
    """One explanation per node and sample, shared by all its starving GPUs."""
    node = mem.node
    cached = node.rule_state.get("starvation_cause")
    assert node.sample is not None  # rules run on a sample
    if cached is None or cached[0] != node.now:
        cached = node.rule_state["starvation_cause"] = (
            node.now,
            explain(node, node.sample, win.shares, p),
        )
    return cached[1]


def idle(util_percent: float) -> bool:
    """Whether the rules call a GPU's utilisation idle: 0 % (NVML reports whole percent), as
    job_hung judges it; the dashboard shows idle GPUs by the same test."""
    return util_percent <= 0


def job_hung(g: GpuSample, mem: GpuMemory, p: JobHungParams) -> object:
    util, used, power = g.utilization_percent, g.memory_used_percent, g.power_w
    if util is None or used is None:
        return None
    state = mem.rule_state
    if used < p["memory_used"] and not g.processes and power is not None:
        # this GPU's power with no job
        state["job_hung_idle_w"] = min(power, state.get("job_hung_idle_w", power))
    if used < p["memory_used"] or not idle(util) or any(g.utilization_samples_percent):
        return CLEAR
    if power is None:
        return None
    idle_w = state.get("job_hung_idle_w")
    limit = g.power_limit_w or (mem.facts.power_limit_w if mem.facts else None)
    if idle_w is not None:
        bound, basis = idle_w * (1 + p["idle_margin"]), f"its idle {idle_w:.0f} W"
    elif limit:
        bound, basis = (
            p["idle_fraction_of_limit"] * limit,
            f"{p['idle_fraction_of_limit'] * 100:.0f} % of its {limit:.0f} W limit",
        )
    else:
        return None
    if power > bound:
        return HOLD  # busy in a way utilisation does not show
    held = (
        f"{g.memory_used_mib / 1024:.1f} GiB" if g.memory_used_mib is not None else f"{used:.0f} %"
    )
    pids = ", ".join(str(proc.pid) for proc in g.processes[:4])
    return Finding(
        CRITICAL,
        f"GPU idle at 0 % with {held} of memory held and power at idle ({power:.0f} W, near {basis})",
        "the job looks hung: read its log or a stack dump (py-spy dump --pid …), then restart it",
        f"processes {pids}" if pids else "",
        {"memory_used_percent": round(used, 1), "power_w": power, "idle_bound_w": round(bound, 1)},
    )


def job_spin_stall(g: GpuSample, mem: GpuMemory, p: JobSpinStallParams) -> object:
    util, power = g.utilization_percent, g.power_w
    limit = g.power_limit_w or (mem.facts.power_limit_w if mem.facts else None)
    if util is None or power is None or not limit:
        return None
    if util < p["busy_util"] or power >= p["clear_power_ratio"] * limit:
        return CLEAR
    if power >= p["power_ratio"] * limit:
        return HOLD
    return Finding(
        WARNING,
        f"utilisation {util:.0f} % but power only {power:.0f} W of {limit:.0f} W",
        f"kernels are spinning without work, often a stuck collective ({vendor(g.vendor).collectives}): "
        "check the other ranks of the job",
        evidence={"utilization_percent": util, "power_w": power, "power_limit_w": limit},
    )



class LoaderStarvationParams(TypedDict):
    """``[rules.loader_starvation]`` (its defaults in RULES below)."""

    warning: float
    critical: float
    min_dips: float
    clear_below: float
    memory_used: float
    window_s: float
    window_1hz_s: float
    every_s: float
    warmup_s: float
    snapshot_min_s: float
    clear_s: float
    io_some: float
    io_full: float
    cpu_some: float
    memory_some: float
    d_state_processes: float
    await_ratio: float
    await_min_ms: float
    network_correlation: float
    network_min_bytes_per_s: float
    checkpoint_before_s: float
    checkpoint_after_s: float
    enabled: bool


class JobHungParams(TypedDict):
    """``[rules.job_hung]`` (its defaults in RULES below)."""

    memory_used: float
    idle_margin: float
    idle_fraction_of_limit: float
    for_s: float
    clear_s: float
    enabled: bool


class JobSpinStallParams(TypedDict):
    """``[rules.job_spin_stall]`` (its defaults in RULES below)."""

    busy_util: float
    power_ratio: float
    clear_power_ratio: float
    for_s: float
    enabled: bool


RULES = (
    Rule(
        "loader_starvation",
        GPU,
        loader_starvation,
        {
            "warning": 0.15,
            "critical": 0.40,
            "min_dips": 3,
            "clear_below": 0.05,
            "memory_used": 10,
            "window_s": 60,
            "window_1hz_s": 120,
            "every_s": 5,
            "warmup_s": 120,
            "snapshot_min_s": 2,
            "clear_s": 120,
            "io_some": 20,
            "io_full": 5,
            "cpu_some": 50,
            "memory_some": 10,
            "d_state_processes": 1,
            "await_ratio": 3,
            "await_min_ms": 1.0,
            "network_correlation": 0.5,
            "network_min_bytes_per_s": 1e6,
            "checkpoint_before_s": 60,
            "checkpoint_after_s": 10,
        },
        "zero fraction of sub-second utilisation with ≥ min_dips separate dips while a job holds memory",
        ascending=("clear_below", "warning", "critical"),
        none_is_timing=True,
    ),
    Rule(
        "job_hung",
        GPU,
        job_hung,
        {
            "memory_used": 10,
            "idle_margin": 0.10,
            "idle_fraction_of_limit": 0.25,
            "for_s": 300,
            "clear_s": 30,
        },
        "utilisation 0 the whole time, memory held, power at idle",
        slow=True,
    ),
    Rule(
        "job_spin_stall",
        GPU,
        job_spin_stall,
        {"busy_util": 95, "power_ratio": 0.35, "clear_power_ratio": 0.5, "for_s": 300},
        "utilisation ≥ busy_util but power < power_ratio × the enforced limit",
        ascending=("power_ratio", "clear_power_ratio"),
        slow=True,
    ),
)

_BY_ID = {rule.id: rule for rule in RULES}


class PressureLimits(NamedTuple):
    """PSI avg10 levels at which loader_starvation names a resource the cause of a starving
    GPU, for the UI to colour the pressure pane by."""

    cpu_some_percent: float
    io_some_percent: float
    memory_some_percent: float
    io_full_percent: float


def pressure_limits(params: Mapping[str, Mapping[str, Any]]) -> PressureLimits:
    """From rule id -> parameter overrides; the rule's defaults fill what is not given."""
    p = {**_BY_ID["loader_starvation"].defaults, **params.get("loader_starvation", {})}
    return PressureLimits(
        float(p["cpu_some"]), float(p["io_some"]), float(p["memory_some"]), float(p["io_full"])
    )
