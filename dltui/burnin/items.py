"""What a burn-in verdict is made of: the four statuses, an item (a check with its evidence
and next step), a GPU's and a node's verdict, and the run they judge (``NodeRun``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from dltui.config import BurninSection
from dltui.config_schema import as_dict
from dltui.core.models import NodeEvent, NodeFacts, Sample
from dltui.core.text import clean
from dltui.node.schema import BurninPhase

from .fold import RunFold

VerdictStatus = Literal["pass", "warn", "fail", "not run"]
PASS: VerdictStatus = "pass"
WARN: VerdictStatus = "warn"
FAIL: VerdictStatus = "fail"
NOT_RUN: VerdictStatus = "not run"
_RANK = {PASS: 0, WARN: 1, NOT_RUN: 2, FAIL: 3}

# The thresholds are declared (type, range, default, words) in dltui/config.py, BurninSection.
DEFAULTS: dict[str, Any] = as_dict(BurninSection())


@dataclass
class Item:
    check: str  # short name: "stressor", "thermal", "ecc", ...
    status: VerdictStatus
    evidence: str
    next_step: str = ""
    gpu: int | None = None

    def __post_init__(self) -> None:
        # Evidence quotes the node's tools (a stressor's error line, dcgmi's words): cleaned
        # here, so the screen, the CLI, the Markdown and the HTML report all show the safe form.
        self.evidence = clean(self.evidence)
        self.next_step = clean(self.next_step)

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.status,
            "evidence": self.evidence,
            "next_step": self.next_step,
            "gpu": self.gpu,
        }


@dataclass
class GpuVerdict:
    index: int
    items: list[Item] = field(default_factory=list)

    @property
    def status(self) -> VerdictStatus:
        return worst(i.status for i in self.items)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "status": self.status,
            "items": [i.to_dict() for i in self.items],
        }


@dataclass
class NodeVerdict:
    node: str
    gpus: list[GpuVerdict] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)  # node-wide checks
    optional: frozenset[str] = frozenset()  # checks whose "not run" does not hold back a pass

    @property
    def status(self) -> VerdictStatus:
        counted = [i.status for i in self.items if i not in self.not_run_optional()]
        return worst(counted + [g.status for g in self.gpus])

    def not_run_optional(self) -> list[Item]:
        """The optional checks that did not run: listed with the verdict, never a pass."""
        return [i for i in self.items if i.status == NOT_RUN and i.check in self.optional]

    def headline(self) -> str:
        """``PASS`` or ``PASS (not run: smoke, bmc)``: what the status leaves out, said."""
        skipped = ", ".join(i.check for i in self.not_run_optional())
        return self.status.upper() + (f" (not run: {skipped})" if skipped else "")

    def problems(self) -> list[Item]:
        """Every item that did not pass, the worst first (failures before "not run")."""
        every = self.items + [i for g in self.gpus for i in g.items]
        return sorted((i for i in every if i.status != PASS), key=lambda i: -_RANK[i.status])

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "status": self.status,
            "headline": self.headline(),
            "exit_code": exit_code([self]),
            "optional": sorted(self.optional),
            "items": [i.to_dict() for i in self.items],
            "gpus": [g.to_dict() for g in self.gpus],
        }


def worst(statuses: Iterable[VerdictStatus]) -> VerdictStatus:
    return max(statuses, key=lambda s: _RANK[s], default=NOT_RUN)


def exit_code(verdicts: list[NodeVerdict]) -> int:
    """0 pass, 1 warnings, 2 a failure anywhere, 3 something could not run or be judged."""
    statuses = [v.status for v in verdicts]
    if not statuses:
        return 3
    if FAIL in statuses:
        return 2
    if NOT_RUN in statuses:
        return 3
    return 1 if WARN in statuses else 0


@dataclass
class NodeRun:
    """Everything the verdict reads about one node's run."""

    node: str
    plan: dict[str, Any]  # the driver's plan.json
    result: dict[str, Any]  # the driver's result.json (phases, tools, exit codes)
    samples: list[Sample] = field(default_factory=list)
    events: list[NodeEvent] = field(default_factory=list)
    facts: NodeFacts | None = None
    outputs: dict[str, str] = field(default_factory=dict)  # stressor output file -> text
    # The samples folded as they came (what a live session keeps instead of ``samples``).
    fold: RunFold | None = None
    _made: tuple[tuple[float, int], RunFold] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def folded(self, ramp_s: float = BurninSection().ramp_s) -> RunFold:
        """The run's fold: the live one, else one made once from ``samples``."""
        if self.fold is not None:
            return self.fold
        key = (ramp_s, len(self.samples))
        if self._made is None or self._made[0] != key:
            self._made = (key, RunFold.of(self.samples, self.result.get("phases"), ramp_s))
        return self._made[1]

    @property
    def sample_count(self) -> int:
        return self.fold.count if self.fold is not None else len(self.samples)

    def phase(self, name: BurninPhase) -> tuple[float, float] | None:
        span = (self.result.get("phases") or {}).get(name)
        if not span or span[0] is None:
            return None
        return float(span[0]), float(span[1] if span[1] is not None else float("inf"))
