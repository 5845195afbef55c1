"""What the engine remembers between samples, per node and per GPU.

Rules read it (the previous reading for counter deltas, the GPU's facts, the node's history)
and may keep their own small state in ``rule_state``, under keys that name the rule or what
they hold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from ..models import GpuFacts, GpuSample, NodeFacts, Sample
from .condition import Condition, Timing

if TYPE_CHECKING:
    from ..gpu_inventory import GpuInventory
    from ..state import NodeHistory
    from .base import Rule


class Bound(NamedTuple):
    """A rule resolved for one node, once; flat so the per-sample loop unpacks it and reads
    no attributes."""

    check: Any
    rule_id: str
    params: dict[str, Any]  # the rule's parameters for this node
    timing: Timing
    rule: Rule


class GpuMemory:
    __slots__ = ("index", "node", "now", "prev", "slow_prev", "facts", "conditions", "rule_state")

    def __init__(self, index: int, node: NodeMemory):
        self.index = index
        self.node = node
        self.now = 0.0
        # This GPU's reading when the rule now running last ran: the previous sample for the
        # rules judged every sample, the previous slow pass for slow rules (counter rises).
        self.prev: GpuSample | None = None
        self.slow_prev: GpuSample | None = None
        self.facts: GpuFacts | None = node.gpu_facts.get(index)
        self.conditions: dict[str, Condition] = {}  # rule id -> its condition on this GPU
        self.rule_state: dict[str, Any] = {}


class NodeMemory:
    __slots__ = (
        "name",
        "groups",
        "rules",
        "slow_rules",
        "next_slow",
        "conditions",
        "gpus",
        "now",
        "first_seen",
        "sample",
        "prev",
        "facts",
        "gpu_facts",
        "history",
        "interval_s",
        "window",
        "rule_state",
        "consumers",
        "events_seen",
        "inventory",
    )

    def __init__(
        self,
        name: str,
        groups: tuple[str, ...],
        rules: dict[str, list[Bound]],
        slow_rules: dict[str, list[Bound]],
        window: bool,
    ):
        self.name = name
        self.groups = groups
        self.rules = rules  # scope -> bound rules judged every sample, enabled ones only
        self.slow_rules = slow_rules  # scope -> bound rules judged every few seconds
        self.next_slow = 0.0
        # rule id -> its condition on the node (gpu None)
        self.conditions: dict[str, Condition] = {}
        self.gpus: dict[int, GpuMemory] = {}
        self.now = 0.0
        self.first_seen: float | None = None
        self.sample: Sample | None = None  # the one being judged
        self.prev: Sample | None = None
        self.facts: NodeFacts | None = None
        self.gpu_facts: dict[int, GpuFacts] = {}
        self.history: NodeHistory | None = None
        self.interval_s = 1.0
        self.window = window  # judging a snapshot window rather than watching
        self.rule_state: dict[str, Any] = {}
        self.consumers: dict[str, list[Bound]] = {}  # event kind -> enabled rules consuming it
        self.events_seen: dict[tuple, None] = {}  # id-less kernel events, insertion-ordered
        self.inventory: GpuInventory | None = None  # GPUs listed in earlier sessions

    def gpu(self, index: int) -> GpuMemory:
        mem = self.gpus.get(index)
        if mem is None:
            mem = self.gpus[index] = GpuMemory(index, self)
        return mem

    def conditions_of(self, gpu: int | None) -> dict[str, Condition]:
        return self.conditions if gpu is None else self.gpu(gpu).conditions
