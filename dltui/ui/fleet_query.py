"""Which nodes the fleet screen lists, and in which order: the ``/`` filter and the sort keys.

A filter is space-separated terms that must all hold. A term is either ``KEY OP VALUE``
(``temp>80``, ``util<5``, ``status!=ok``) or plain text matched against the node's name,
status and reason. A GPU key holds when *any* GPU of the node satisfies it; a value the
hardware does not report (``n/a``) never matches.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from dltui.core import gpu_fields
from dltui.core.attribution import process_owner
from dltui.core.fabric import badge as fabric_badge
from dltui.core.gpu_fields import GpuField
from dltui.core.state import NodeState
from dltui.core.timeline import severity_rank
from dltui.core.units import badge
from dltui.core.vendors import vendor

from . import levels

Getter = Callable[[NodeState, float], list]


def _gpus(attr: str) -> Getter:
    def get(node: NodeState, now: float) -> list:
        return [getattr(g, attr) for g in node.sample.gpus] if node.sample else []

    return get


def _host(read: Callable) -> Getter:
    def get(node: NodeState, now: float) -> list:
        return [read(node.sample)] if node.sample else []

    return get


def _memory_used_percent(sample) -> float | None:
    m = sample.memory
    if m is None or m.used_bytes is None or not m.total_bytes:
        return None
    return 100.0 * m.used_bytes / m.total_bytes


def _jobs(node: NodeState) -> list[str]:
    gpus = node.sample.gpus if node.sample else []
    return [str(p.slurm_job) for g in gpus for p in g.processes if p.slurm_job is not None]


def _users(node: NodeState) -> list[str]:
    gpus = node.sample.gpus if node.sample else []
    owners = [process_owner(p) for g in gpus for p in g.processes]
    jobs = [node.jobs[p.slurm_job].user for g in gpus for p in g.processes if p.slurm_job in node.jobs]
    return [u for u in owners + jobs if u]


def _vendors(node: NodeState) -> list[str]:
    return [vendor(g.vendor).key for g in node.sample.gpus] if node.sample else []


def _sched(node: NodeState) -> list[str]:
    """The scheduler's word; a node still draining is also ``drain`` (it takes no new work)."""
    view = node.scheduler
    word = view.word if view else ""
    if not word:
        return ["none"]
    return [word, "drain"] if word == "draining" else [word]


# The GPU keys from the field table; the first six in the order the help has always listed them.
_GPU_KEYS_FIRST = ("temp", "hbm", "margin", "util", "power", "gpumem")


def _gpu_filters() -> list[GpuField]:
    first = {key: i for i, key in enumerate(_GPU_KEYS_FIRST)}
    return sorted(gpu_fields.FILTERS, key=lambda f: first.get(f.filter or "", len(first)))


KEYS: dict[str, tuple[str, Getter]] = {
    "name": ("node name", lambda n, now: [n.name]),
    "status": ("status word: ok, stale, unreachable, …", lambda n, now: [levels.node_status(n, now)[1]]),
    **{f.filter: (f"{f.label} {f.unit}".rstrip(), _gpus(f.attr)) for f in _gpu_filters() if f.filter},
    "cpu": ("host CPU %", _host(lambda s: s.cpu.total_percent if s.cpu else None)),
    "mem": ("host memory used %", _host(_memory_used_percent)),
    "io": (
        "I/O pressure (PSI some avg10) %",
        _host(lambda s: s.pressure.io_some_avg10_percent if s.pressure else None),
    ),
    "alerts": ("open alerts", lambda n, now: [len(n.alerts)]),
    "unit": (
        "training unit: active, failed, flapping, inactive",
        lambda n, now: [badge(n.sample.units if n.sample else [], n.alerts) or "none"],
    ),
    "fabric": (
        "HCA ports and NVLink: ok, down, slow, errors, none",
        lambda n, now: [fabric_badge(n.sample, n.alerts) or "none"],
    ),
    "age": ("seconds since the newest sample", lambda n, now: [n.age(now)]),
    "job": ("a Slurm job id on the node's GPUs", lambda n, now: _jobs(n)),
    "user": ("a user whose process or job is on the node's GPUs", lambda n, now: _users(n)),
    "sched": ("scheduler: idle, alloc, mix, drain (draining too), down, cordoned, none", lambda n, now: _sched(n)),
    "vendor": ("a GPU's vendor: nvidia, amd, intel", lambda n, now: _vendors(n)),
}
TEXT_KEYS = {"name", "status", "unit", "fabric", "job", "user", "sched", "vendor"}
_OPS = {">=": operator.ge, "<=": operator.le, "!=": operator.ne, "=": operator.eq, ">": operator.gt, "<": operator.lt}
_TERM = re.compile(r"^([a-z]+)(>=|<=|!=|==|=|>|<)(.+)$")
_SPACED_OP = re.compile(r"\s*(>=|<=|!=|==|=|>|<)\s*")


class FilterError(ValueError):
    """A filter that cannot be understood; the message says why and what would work."""


@dataclass(frozen=True)
class Filter:
    text: str
    tests: tuple[Callable[[NodeState, float], bool], ...]

    def __call__(self, node: NodeState, now: float) -> bool:
        return all(test(node, now) for test in self.tests)


def parse_filter(text: str) -> Filter:
    tests = tuple(_term(t) for t in _SPACED_OP.sub(r"\1", text.strip()).split())
    return Filter(text.strip(), tests)


def _term(term: str) -> Callable[[NodeState, float], bool]:
    m = _TERM.match(term.lower())
    if not m:
        needle = term.lower()
        return lambda node, now: needle in f"{node.name} {node.status} {node.reason or ''}".lower()
    key, op_text, raw = m.groups()
    if key not in KEYS:
        raise FilterError(f"unknown key {key!r}; keys: {', '.join(KEYS)}")
    op = _OPS["=" if op_text == "==" else op_text]
    get = KEYS[key][1]
    if key in TEXT_KEYS:
        if op not in (operator.eq, operator.ne):
            raise FilterError(f"{key} takes = or !=, not {op_text}")
        if op is operator.ne:  # none of its words is it (a draining node is also "drain")
            return lambda node, now: all(v.lower() != raw for v in get(node, now))
        return lambda node, now: any(v.lower() == raw for v in get(node, now))
    try:
        value = float(raw)
    except ValueError:
        raise FilterError(f"{key}{op_text}{raw}: {raw!r} is not a number") from None
    return lambda node, now: any(v is not None and op(v, value) for v in get(node, now))


# -- sorting ----------------------------------------------------------------------------------

SORT_KEYS = ("name", "status", "temp", "util", "alerts")
"""name; status (down first); temp (hottest GPU first); util (least busy GPU first); alerts."""

_LAST = float("inf")


def _status_rank(node: NodeState) -> int:
    return {levels.HOT: 0, levels.WARM: 1}.get(levels.status(node.status), 2)


def _max_temp(node: NodeState) -> float:
    temps = [g.temperature_c for g in node.sample.gpus if g.temperature_c is not None] if node.sample else []
    return -max(temps) if temps else _LAST


def _min_util(node: NodeState) -> float:
    utils = (
        [g.utilization_percent for g in node.sample.gpus if g.utilization_percent is not None] if node.sample else []
    )
    return min(utils) if utils else _LAST


def _alerts(node: NodeState) -> tuple:
    worst = node.worst_severity()
    return (-(severity_rank(worst) + 1) if worst else 0, -len(node.alerts))


@functools.lru_cache(maxsize=65536)  # names rarely change; sorted on every redraw
def _natural(name: str) -> tuple:
    """gpu2 before gpu10."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


_SORTS: dict[str, Callable[[NodeState], object]] = {
    "name": lambda n: (),
    "status": lambda n: _status_rank(n),
    "temp": _max_temp,
    "util": _min_util,
    "alerts": _alerts,
}


def sort_nodes(nodes: Iterable[NodeState], key: str) -> list[NodeState]:
    """Sorted by ``key``, ties by name (stable: the transports' order for equal names)."""
    by = _SORTS[key]
    return sorted(nodes, key=lambda n: (by(n), _natural(n.name)))
