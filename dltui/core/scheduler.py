"""The scheduler's view of a node, parsed: Slurm's state and reason (``scontrol show node``) and
Kubernetes' Ready condition, ``unschedulable`` and taints (``kubectl get node -o json``).

Pure functions over the tools' text; the reads live in ``dltui.transport.scheduler``, the
changes (drain, resume, cordon, uncordon) in ``dltui.actions.scheduler``. Text from a node or a
cluster is cleaned here, once (``dltui.core.text``): a reason is shown and written back.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .text import clean

# What dltui writes as a drain reason, and the only reason ``resume`` undoes without --force
# (LBNL NHC's rule: never undo a drain someone else set).
DLTUI_REASON_PREFIX = "dltui:"
REASON_MAX = 200  # characters of the operator's text, a Slurm reason is one line

# Slurm's base states (the word before the first '+') as the SCHED column writes them.
_BASE_WORDS = {
    "IDLE": "idle",
    "ALLOCATED": "alloc",
    "ALLOC": "alloc",
    "MIXED": "mix",
    "MIX": "mix",
    "COMPLETING": "comp",
    "DOWN": "down",
    "FUTURE": "future",
    "UNKNOWN": "unknown",
    "ERROR": "error",
}
_BUSY = ("ALLOCATED", "ALLOC", "MIXED", "MIX", "COMPLETING")
# ``scontrol show node`` appends who set the reason and when: ``[slurm@2023-01-26T10:11:39]``.
_SET_BY = re.compile(r"\s*\[([^\]@\s]+)@(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\]\s*$")
# The keys that may follow Reason= on the same line (22.05 to 24.x): where the reason ends.
_AFTER_REASON = re.compile(r" (?:Comment|Extra|ResumeAfter|ReservationName|InstanceId|InstanceType)=")


@dataclass(frozen=True)
class SlurmNode:
    """One node as ``scontrol show node`` reports it."""

    name: str
    state: str  # as printed: IDLE, MIXED+DRAIN, DOWN+CLOUD+REBOOT_ISSUED
    reason: str = ""  # without the "[user@time]" Slurm appends
    reason_by: str = ""  # who set it
    reason_at: str = ""  # when (the controller's clock, ISO without zone)

    @property
    def base(self) -> str:
        return self.state.split("+", 1)[0].rstrip("*~#!%$@^-")

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(self.state.split("+")[1:])

    @property
    def drained(self) -> bool:
        """Draining or drained: the scheduler sends it no new work."""
        return "DRAIN" in self.flags or self.base in ("DRAIN", "DRAINED", "DRAINING")

    @property
    def down(self) -> bool:
        return self.base == "DOWN" or "NOT_RESPONDING" in self.flags

    @property
    def busy(self) -> bool:
        """Jobs are running on it (alloc, mix, completing)."""
        return self.base in _BUSY

    @property
    def word(self) -> str:
        """The SCHED column's word: idle, alloc, mix, drain (nothing left running), draining
        (jobs still running), down; other states in lower case."""
        if self.down:
            return "down"
        if self.drained:
            return "draining" if self.busy else "drain"
        return _BASE_WORDS.get(self.base, self.base.lower())

    @property
    def drained_by_dltui(self) -> bool:
        return self.drained and self.reason.startswith(DLTUI_REASON_PREFIX)

    def describe(self) -> str:
        """``drain: dltui: GPU 3 at 91 °C [alice]`` — the word, and the reason when there is one."""
        return f"{self.word}: {self.reason}" if self.reason else self.word


def parse_scontrol_node(text: str) -> SlurmNode | None:
    """The first node of ``scontrol show node [-o] NAME`` (one line with -o, else an indented
    block); None when the text holds no node (``Node x not found``)."""
    block = text.strip().split("\n\n", 1)[0]
    line = " ".join(part.strip() for part in block.splitlines())
    name = re.search(r"(?:^|\s)NodeName=(\S+)", line)
    state = re.search(r"(?:^|\s)State=(\S+)", line)
    if not name or not state:
        return None
    reason, by, at = "", "", ""
    m = re.search(r"(?:^|\s)Reason=(.*)$", line)
    if m:
        raw = m.group(1)
        stop = _AFTER_REASON.search(raw)
        if stop:
            raw = raw[: stop.start()]
        set_by = _SET_BY.search(raw)
        if set_by:
            by, at = set_by.group(1), set_by.group(2)
            raw = raw[: set_by.start()]
        reason = "" if raw.strip() == "(null)" else raw.strip()
    return SlurmNode(clean(name.group(1)), clean(state.group(1)), clean(reason), clean(by), clean(at))


def drain_reason(text: str, operator: str) -> str:
    """The reason dltui writes: ``dltui: TEXT [operator]``, one line, at most REASON_MAX."""
    one_line = " ".join(clean(text).split())[:REASON_MAX]
    who = " ".join(clean(operator).split()) or "unknown"
    return f"{DLTUI_REASON_PREFIX} {one_line} [{who}]"


# -- Kubernetes ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class KubeNode:
    """A Kubernetes node as ``kubectl get node NAME -o json`` shows it."""

    name: str
    ready: bool | None  # the Ready condition; None when it is Unknown or missing
    ready_reason: str = ""
    unschedulable: bool = False  # cordoned
    taints: tuple[str, ...] = ()  # key=value:effect

    @property
    def word(self) -> str:
        if self.ready is not True:
            return "notready" if self.ready is False else "unknown"
        return "cordoned" if self.unschedulable else "ready"

    def detail(self) -> str:
        """Why not ready, and the taints: ``KubeletNotReady; taints gpu=bad:NoSchedule``."""
        parts = []
        if self.ready is not True and self.ready_reason:
            parts.append(self.ready_reason)
        if self.taints:
            parts.append("taints " + ", ".join(self.taints))
        return "; ".join(parts)

    def describe(self) -> str:
        return f"{self.word} {self.detail()}".strip()


def _table(obj: dict, key: str) -> dict:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def parse_kubectl_node(text: str) -> KubeNode | None:
    """The node object ``kubectl get node NAME -o json`` prints; None when it is not one."""
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict) or obj.get("kind") not in (None, "Node"):
        return None
    meta, spec, status = (_table(obj, k) for k in ("metadata", "spec", "status"))
    ready: bool | None = None
    why = ""
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            ready = {"True": True, "False": False}.get(str(cond.get("status")))
            why = clean(str(cond.get("reason") or cond.get("message") or ""))
    taints = []
    for t in spec.get("taints") or []:
        if isinstance(t, dict) and t.get("key"):
            value = f"={t['value']}" if t.get("value") else ""
            taints.append(clean(f"{t['key']}{value}:{t.get('effect', '')}"))
    return KubeNode(clean(str(meta.get("name") or "")), ready, why, bool(spec.get("unschedulable")), tuple(taints))


# -- what the SCHED column shows ----------------------------------------------------------------


@dataclass(frozen=True)
class SchedulerView:
    """What the dashboard knows of a node's scheduler(s): Slurm, Kubernetes, or why not."""

    slurm: SlurmNode | None = None
    kube: KubeNode | None = None
    problem: str = ""  # a read that failed, in plain words ("scontrol: node x not found")

    @property
    def word(self) -> str:
        """The column's word: Slurm's, else Kubernetes'; '' when neither is known."""
        if self.slurm is not None:
            return self.slurm.word
        if self.kube is not None:
            return self.kube.word
        return ""

    @property
    def reason(self) -> str:
        if self.slurm is not None:
            return self.slurm.reason
        if self.kube is not None:
            return self.kube.detail()
        return ""

    def cell(self) -> str:
        """``drain dltui: hot GPU [bob]``, ``mix``, ``cordoned``; '' when not scheduled."""
        return f"{self.word} {self.reason}".strip() if self.word else ""


def slurm_name_for(hostname: str, mapping: str | None) -> str:
    """The node's Slurm NodeName: its own short host name (what ``hostname -s`` prints there),
    or a group's ``slurm_node`` where they differ (``{host}`` in it stands for the short name)."""
    short = clean(hostname.strip()).split(".", 1)[0]
    if not mapping:
        return short
    return mapping.replace("{host}", short)


# -- what the snapshot and the exporter say -----------------------------------------------------

# The transport's words for a node without scontrol: a fact, never a problem worth a line.
NO_SLURM_WORDS = "no Slurm on this node (scontrol not found)"


def view_lines(view: SchedulerView | None) -> list[str]:
    """The snapshot text's lines: ``slurm: drain — dltui: GPU 3 hot [alice]``, ``kubernetes:
    cordoned — taints gpu=bad:NoSchedule``, ``scheduler: n/a — scontrol: …``; none for a
    node not read, or one without Slurm and no Kubernetes name (most nodes say nothing)."""
    if view is None:
        return []
    out = []
    if view.slurm is not None:
        s = view.slurm
        out.append(f"slurm: {s.word}" + (f" — {s.reason}" if s.reason else "") + f" ({s.name} {s.state})")
    if view.kube is not None:
        k = view.kube
        out.append(f"kubernetes: {k.word}" + (f" — {k.detail()}" if k.detail() else "") + f" ({k.name})")
    if view.problem and view.problem != NO_SLURM_WORDS:
        out.append(f"scheduler: n/a — {view.problem}")
    return out



def view_dict(view: SchedulerView | None) -> dict | None:
    """The snapshot JSON's ``scheduler`` object (docs/json-schema.md); None when not read."""
    if view is None:
        return None
    slurm = kube = None
    if view.slurm is not None:
        s = view.slurm
        slurm = {
            "name": s.name, "state": s.state, "word": s.word, "drained": s.drained,
            "reason": s.reason or None, "reason_by": s.reason_by or None, "reason_at": s.reason_at or None,
        }
    if view.kube is not None:
        k = view.kube
        kube = {
            "name": k.name, "word": k.word, "ready": k.ready, "ready_reason": k.ready_reason or None,
            "unschedulable": k.unschedulable, "taints": list(k.taints),
        }
    return {"slurm": slurm, "kubernetes": kube, "problem": view.problem or None}


def view_states(view: SchedulerView | None) -> list[tuple[str, str]]:
    """(scheduler, state word) pairs for the exporter's info series: a bounded set of words
    (Slurm's base states, Kubernetes' ready / notready / unknown / cordoned), never a reason."""
    if view is None:
        return []
    out = []
    if view.slurm is not None:
        out.append(("slurm", view.slurm.word))
    if view.kube is not None:
        out.append(("kubernetes", view.kube.word))
    return out
