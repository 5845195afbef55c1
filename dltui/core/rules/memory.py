"""What the engine remembers between samples, per node and per GPU.

Rules read it (the previous reading for counter deltas, the GPU's facts, the node's history)
and may keep their own small state in ``rule_state``, under keys that name the rule or what
they hold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from dltui.node.schema import pci_key

from ..models import GpuFacts, GpuSample, NodeEvent, NodeFacts, Sample
from .base import SCOPES
from .condition import Condition, Timing

if TYPE_CHECKING:
    from ..gpu_inventory import GpuInventory
    from ..state import NodeHistory
    from .base import Rule
    from .settings import RuleSettings

EVENTS_REMEMBERED = 1000  # per node: id-less kernel events a reconnecting probe may read again


class Bound(NamedTuple):
    """A rule resolved for one node, once; flat so the per-sample loop unpacks it and reads
    no attributes."""

    check: Any
    rule_id: str
    params: dict[str, Any]  # the rule's parameters for this node
    timing: Timing
    rule: Rule


class GpuMemory:
    __slots__ = ("index", "node", "now", "prev", "slow_prev", "facts", "conditions", "rule_state", "vendor_rules")

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
        # id(bound rules) -> (those rules, this GPU's vendor, the ones that judge its GPUs:
        # Rule.vendors): filtered once per list and vendor, not per rule per sample
        self.vendor_rules: dict[int, tuple[list, str, list]] = {}


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
        "status_seen",
        "received_seen",
        "quiet_until",
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
        # the engine's redraw-tick shortcut: the node as last judged quiet (status and
        # interval; its newest sample's arrival) and until when its STATUS rules can only
        # answer CLEAR
        self.status_seen: tuple[object, ...] | None = None
        self.received_seen = 0.0
        self.quiet_until = 0.0

    def gpu(self, index: int) -> GpuMemory:
        mem = self.gpus.get(index)
        if mem is None:
            mem = self.gpus[index] = GpuMemory(index, self)
        return mem

    def conditions_of(self, gpu: int | None) -> dict[str, Condition]:
        return self.conditions if gpu is None else self.gpu(gpu).conditions

    def first_sighting(self, event: NodeEvent) -> bool:
        """Whether this kernel event is new. ``FleetState`` already drops a line it has seen by
        its id (boot + µs since boot); one without an id (no boot id on that node) is known
        here by its time and what it says, so a reconnect's backfill counts once."""
        if event.data.get("id") is not None:
            return True
        key = (round(event.time, 3), event.kind, event.gpu, repr(sorted(event.data.items())))
        seen = self.events_seen
        if key in seen:
            return False
        seen[key] = None
        if len(seen) > EVENTS_REMEMBERED:
            del seen[next(iter(seen))]
        return True

    def gpu_by_pci(self, pci: str | None) -> int | None:
        """The index of the GPU at PCI bus id ``pci`` (however written), from the facts."""
        wanted = pci_key(pci) if pci else None
        if wanted is None:
            return None
        return next((f.index for f in self.gpu_facts.values() if pci_key(f.bus_id) == wanted), None)


def bind(settings: RuleSettings, name: str, window: bool) -> NodeMemory:
    """A node's memory with its enabled rules resolved for it once (its groups' parameters),
    by scope, judged every sample or every few seconds (``Rule.slow``), and the event
    consumers by the event kind they take."""
    groups = settings.groups_of(name)
    params = settings.params(groups)
    fast: dict[str, list[Bound]] = {scope: [] for scope in SCOPES}
    slow: dict[str, list[Bound]] = {scope: [] for scope in SCOPES}
    consumers: dict[str, list[Bound]] = {}
    for rule in settings.rules.values():
        p = params[rule.id]
        if p["enabled"]:
            bound = Bound(rule.check, rule.id, p, Timing.from_params(p), rule)
            (slow if rule.slow else fast)[rule.scope].append(bound)
            for kind in rule.consumes if rule.on_event is not None else ():
                consumers.setdefault(kind, []).append(bound)
    nm = NodeMemory(name, groups, fast, slow, window)
    nm.consumers = consumers
    return nm
