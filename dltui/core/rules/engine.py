"""The anomaly engine: runs the rules on what ``FleetState`` sees, keeps alerts and timeline.

``FleetState`` calls ``observe_sample`` for every sample, ``observe_event`` for every event
and ``tick`` on every redraw. The engine answers by mutating the node: ``node.alerts`` (one
``Alert`` per (rule, GPU)) and ``node.timeline`` (alert opened / changed / closed). Work per
sample is a few comparisons per rule and GPU; a rule's words are built only when it fires.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .. import format as fmt
from ..attribution import alert_holder
from ..gpu_inventory import GpuInventory
from ..models import GpuSample, NodeEvent, Sample
from ..timeline import INFO, Alert, TimelineEntry
from .base import (
    CLEAR,
    FACTS,
    FLEET,
    GPU,
    GPUS,
    HOLD,
    NODE,
    NOT_REPORTED,
    STATUS,
    Finding,
    Rule,
)
from .condition import CHANGE, CLOSE, DROP, OPEN, RANK, Condition, Timing, advance
from .memory import Bound, GpuMemory, NodeMemory, bind
from .settings import RuleSettings

if TYPE_CHECKING:
    from ..state import FleetState, NodeState

SLOW_EVERY_S = 5.0  # how often the slow rules (Rule.slow) are judged while watching
_NEW_BOOT_S = 5.0  # boot times further apart than this are different boots
# Nodes met for the first time that a live tick binds rule memories for (0.15 ms each): the
# rest wait for the next tick. A fleet's hellos come in one burst (512 at once: 77 ms of the
# first frame, the start-up's longest); a node that sends a sample is bound there anyway. A
# snapshot (a window) binds every node at once: its one tick must judge them all.
BIND_PER_TICK = 64
TICK_SLICE = 512  # nodes a step of the tick judges (tick_steps): 1-3 ms


class Engine:
    def __init__(
        self, settings: RuleSettings, snapshot_window_s: float | None = None, inventory: GpuInventory | None = None
    ):
        self.settings = settings
        self.window_s = snapshot_window_s
        self.inventory = inventory  # GPUs listed in earlier sessions, for gpu_missing
        self.nodes: dict[str, NodeMemory] = {}
        self._fleet_dirty = False

    # -- the Engine protocol of FleetState ---------------------------------------------------

    def observe_sample(self, node: NodeState, sample: Sample, now: float) -> None:
        nm = self._memory(node)
        nm.now, nm.sample, nm.interval_s = now, sample, node.interval_s
        if nm.first_seen is None:
            nm.first_seen = now
        if node.facts is not nm.facts:
            self._facts_arrived(node, nm, now)
        # A snapshot judges every rule on every sample: its window is only seconds long.
        slow = nm.window or now >= nm.next_slow
        if slow:
            nm.next_slow = now + SLOW_EVERY_S
        for g in sample.gpus:
            gm = nm.gpus.get(g.index) or nm.gpu(g.index)
            gm.now = now
            if g.error is None:  # an unreadable GPU is gpu_missing's, its values are all None
                self._gpu_pass(node, nm, gm, g, nm.rules[GPU], gm.prev, now)
                if slow:
                    self._gpu_pass(node, nm, gm, g, nm.slow_rules[GPU], gm.slow_prev, now)
                    gm.slow_prev = g
            gm.prev = g
        for rules in (nm.rules, nm.slow_rules) if slow else (nm.rules,):
            for check, _, p, timing, rule in rules[GPUS]:
                for gpu, answer in (check(sample, nm, p) or {}).items():
                    self._judge(node, nm, rule, timing, gpu, answer, now)
            for check, _, p, timing, rule in rules[NODE]:
                self._judge(node, nm, rule, timing, None, check(sample, nm, p), now)

    def _gpu_pass(
        self,
        node: NodeState,
        nm: NodeMemory,
        gm: GpuMemory,
        g: GpuSample,
        rules: list[Bound],
        prev: GpuSample | None,
        now: float,
    ) -> None:
        """One GPU through a list of rules: the hot loop, kept free of anything a quiet rule
        does not need (most answers are CLEAR on a GPU with no condition open)."""
        gm.prev = prev  # what these rules saw last time they ran, for counter rises
        conditions, window = gm.conditions, nm.window
        na = node.rules_na.get(g.index)
        vendor = g.vendor or "nvidia"
        kept = gm.vendor_rules.get(id(rules))
        if kept is None or kept[0] is not rules or kept[1] != vendor:
            # another vendor's concept (Rule.vendors): not judged, and not n/a either
            kept = (rules, vendor, [b for b in rules if not b[4].vendors or vendor in b[4].vendors])
            gm.vendor_rules[id(rules)] = kept
        for check, rule_id, p, timing, rule in kept[2]:
            answer = check(g, gm, p)
            if answer is None or answer is NOT_REPORTED:  # signals not reported on this GPU
                if answer is None and rule.none_is_timing:
                    continue
                if na is None:
                    na = node.rules_na[g.index] = set()
                na.add(rule_id)
                continue
            if na and rule_id in na:
                na.discard(rule_id)
            if answer is CLEAR or answer is HOLD:
                cond = conditions.get(rule_id) if conditions else None
                if cond is None:
                    if not window:
                        continue
                    cond = conditions[rule_id] = Condition()  # a snapshot remembers what broke
            else:
                cond = conditions.get(rule_id)
                if cond is None:
                    cond = conditions[rule_id] = Condition()
            self._advance(node, nm, rule, timing, g.index, cond, answer, now)

    def observe_event(self, node: NodeState, event: NodeEvent, now: float) -> None:
        """Hand the event to the enabled rules that consume its kind (Rule.consumes)."""
        nm = self._memory(node)
        consumers = nm.consumers.get(event.kind)
        if not consumers:
            return
        # facts map PCI ids to GPUs; they may be newer than any sample
        if node.facts is not nm.facts:
            self._facts_arrived(node, nm, now)
        if not nm.first_sighting(event):
            return
        gpu = event.gpu if event.gpu is not None else nm.gpu_by_pci(event.data.get("pci"))
        for _, rule_id, p, timing, rule in consumers:
            assert rule.on_event is not None
            answer = rule.on_event(nm, event, gpu, p)
            if answer is None:
                continue  # kept for the rule's next judgement with the samples
            conditions = nm.conditions_of(gpu)
            cond = conditions.get(rule_id)
            if cond is None:
                cond = conditions[rule_id] = Condition()
            if cond.started is None or event.time < cond.started:
                cond.started = event.time  # the alert dates from the first event, not its arrival
            self._advance(node, nm, rule, timing, gpu, cond, answer, now)

    def tick_steps(self, fleet: FleetState, now: float) -> Iterator[None]:
        """The time-driven judging of every node, TICK_SLICE nodes a step: a caller may run
        other work between steps (the redraw: a key waits for a step, not for 2048 nodes'
        3-15 ms); a sample arriving between two steps is judged by the next tick. A fleet of
        thousands answers CLEAR with nothing open almost always: decided here without _judge's
        calls, and a node judged quiet is not judged again until its rules' clear_for has
        passed or its status or interval changed (a newer sample only puts limits further off)."""
        memories, window, binds = self.nodes, self.window_s is not None, 0
        for i, node in enumerate(list(fleet)):  # a list: nodes may join the fleet between steps
            if i and i % TICK_SLICE == 0:
                yield
            nm = memories.get(node.name)
            if nm is None:
                if binds >= BIND_PER_TICK and not window:
                    continue  # judged from a later tick, BIND_PER_TICK nodes a tick
                binds += 1
                nm = self._memory(node)
            if node.facts is not nm.facts:
                self._facts_arrived(node, nm, now)
            seen = (node.status, node.interval_s)
            received = node.received_at if node.received_at is not None else 0.0
            if now < nm.quiet_until and nm.status_seen == seen and received >= nm.received_seen:
                continue
            conditions = nm.conditions
            quiet = not window
            for check, rule_id, p, timing, rule in nm.rules[STATUS]:
                answer = check(node, nm, now, p)
                if (answer is CLEAR or answer is None) and not window and rule_id not in conditions:
                    continue
                quiet = False
                self._judge(node, nm, rule, timing, None, answer, now)
            if quiet:
                nm.status_seen, nm.received_seen = seen, received
                nm.quiet_until = _quiet_until(node, received, nm)
        if self._fleet_dirty:
            self._fleet_dirty = False
            self._judge_fleet(fleet, now)

    # -- operator actions --------------------------------------------------------------------

    def acknowledgeable(self) -> tuple[str, ...]:
        """The rules whose alerts the operator retires by hand (Rule.acknowledgeable)."""
        return tuple(rule.id for rule in self.settings.rules.values() if rule.acknowledgeable)

    def acknowledge(self, node: NodeState, rule_id: str, gpu: int | None, now: float) -> None:
        """Close an alert by hand (how an event's alert is retired). A condition that still
        holds raises it again after its usual minimum duration."""
        nm = self._memory(node)
        rule = self.settings.rules.get(rule_id)
        if rule is not None and rule.on_acknowledge is not None:
            rule.on_acknowledge(nm, gpu)
        self._close(node, nm, rule_id, gpu, now, "acknowledged")

    # -- internals ---------------------------------------------------------------------------

    def _memory(self, node: NodeState) -> NodeMemory:
        nm = self.nodes.get(node.name)
        if nm is None:
            nm = self.nodes[node.name] = bind(self.settings, node.name, self.window_s is not None)
            nm.history = node.history
            nm.inventory = self.inventory
        return nm

    def _facts_arrived(self, node: NodeState, nm: NodeMemory, now: float) -> None:
        old, new = nm.facts, node.facts
        nm.facts = new
        nm.gpu_facts = {f.index: f for f in new.gpus} if new is not None else {}
        for index, gm in nm.gpus.items():
            gm.facts = nm.gpu_facts.get(index)
        for rule in self.settings.rules.values():
            if rule.on_facts is not None:
                rule.on_facts(nm, now)
        if old is not None and new is not None and old.boot_time and new.boot_time:
            if abs(old.boot_time - new.boot_time) > _NEW_BOOT_S:
                self._new_boot(node, nm, now)
        for check, _, p, timing, rule in nm.rules[FACTS]:
            for f in nm.gpu_facts.values():
                self._judge(node, nm, rule, timing, f.index, check(f, p), now)
        if new != old:  # a reconnect's hello repeats its facts: the fleet's answer stands
            self._fleet_dirty = True

    def _new_boot(self, node: NodeState, nm: NodeMemory, now: float) -> None:
        for rule in self.settings.rules.values():
            if not rule.cleared_by_new_boot:
                continue
            for gpu in [None, *nm.gpus]:
                if rule.id in nm.conditions_of(gpu):
                    self._close(node, nm, rule.id, gpu, now, "new boot")
            if rule.on_new_boot is not None:
                rule.on_new_boot(nm)

    def _judge_fleet(self, fleet: FleetState, now: float) -> None:
        groups: dict[str | None, list] = {}
        for node in fleet:
            nm = self.nodes.get(node.name)
            # a node not bound yet (BIND_PER_TICK) is counted once bound: its facts then
            # "arrive" and mark the fleet for judging again
            if node.facts is not None and nm is not None:
                for group in nm.groups or (None,):
                    groups.setdefault(group, []).append((node.name, node.facts))
        params = self.settings.params()
        for rule in self.settings.rules.values():
            if rule.scope != FLEET:
                continue
            for name, answer in rule.check(groups, params[rule.id]).items():
                nm = self.nodes[name]
                bound = next((b for b in nm.rules[FLEET] if b.rule is rule), None)  # enabled here?
                if bound is not None:
                    self._judge(fleet.nodes[name], nm, rule, bound.timing, None, answer, now)

    def _judge(
        self,
        node: NodeState,
        nm: NodeMemory,
        rule: Rule,
        timing: Timing,
        gpu: int | None,
        answer: Any,
        now: float,
    ) -> None:
        if answer is None:
            return
        conditions = nm.conditions_of(gpu)
        cond = conditions.get(rule.id)
        if cond is None:
            if (answer is CLEAR or answer is HOLD) and not nm.window:
                return
            cond = conditions[rule.id] = Condition()
        self._advance(node, nm, rule, timing, gpu, cond, answer, now)

    def _advance(
        self,
        node: NodeState,
        nm: NodeMemory,
        rule: Rule,
        timing: Timing,
        gpu: int | None,
        cond: Condition,
        answer: Any,
        now: float,
    ) -> None:
        first_seen = nm.first_seen if nm.first_seen is not None else now
        step = advance(cond, answer, now, timing, first_seen, nm.window)
        if step is None:
            return
        if step is DROP:
            del nm.conditions_of(gpu)[rule.id]
            return
        if step is CLOSE:
            self._close(node, nm, rule.id, gpu, now, "cleared")
            return
        key = (rule.id, gpu)
        alert = node.alerts.get(key)
        severity = cond.severity
        assert severity is not None  # a condition that opens or stays open has one
        since = (cond.started if cond.started is not None else now) if alert is None else alert.since
        message = alert_message(answer, cond, timing, since, now, self.window_s) + _holder(node, gpu)
        if step is OPEN:
            node.alerts[key] = Alert(
                rule.id, severity, message, since, gpu, dict(answer.evidence), answer.on_timeline
            )
            if answer.on_timeline:
                node.add(TimelineEntry(now, "alert-opened", message, severity, gpu, rule.id))
            else:
                node.version += 1  # the alerts pane shows it even with no timeline entry
            return
        if alert is None:
            return
        if step is CHANGE:
            if alert.on_timeline:
                changed = f"{alert.severity} → {severity}: {message}"
                node.add(TimelineEntry(now, "alert-changed", changed, severity, gpu, rule.id))
            alert.severity = severity
        alert.message = message
        alert.evidence = dict(answer.evidence)

    def _close(
        self,
        node: NodeState,
        nm: NodeMemory,
        rule_id: str,
        gpu: int | None,
        now: float,
        reason: str,
    ) -> None:
        nm.conditions_of(gpu).pop(rule_id, None)
        alert = node.alerts.pop((rule_id, gpu), None)
        if alert is not None and not alert.on_timeline:
            node.version += 1
        elif alert is not None:
            closed = f"{reason} after {fmt.duration(now - alert.since)}: {alert.message}"
            node.add(TimelineEntry(now, "alert-closed", closed, INFO, gpu, rule_id))


def _holder(node: NodeState, gpu: int | None) -> str:
    """Whose work the GPU holds, said after every rule's alert alike: `` — job 48213 (alice)``."""
    if gpu is None:
        return ""
    gpus = node.sample.gpus if node.sample is not None else ()
    holder = alert_holder(next((g for g in gpus if g.index == gpu), None), node.jobs)
    return f" — {holder}" if holder else ""


def alert_message(
    f: Finding, cond: Condition, timing: Timing, since: float, now: float, window_s: float | None
) -> str:
    """An alert's words: what the rule found, for how long, and what to do."""
    text = f.what
    if f.lasting and now - since >= 1:
        text += f" for {fmt.duration(now - since)}"
    if f.share is not None:
        text += f" ({f.share * 100:.0f} % of the time)"
    if f.detail:
        text += f"; {f.detail}"
    if cond.provisional:
        text += (
            f" (seen throughout the {window_s:g} s snapshot; the "
            f"rule normally needs {timing.needs(RANK[cond.severity or 'warning'])})"
        )
    if f.action:
        text += f" — {f.action}"
    return text


def _quiet_until(node: NodeState, received: float, nm: NodeMemory) -> float:
    """Until when every STATUS rule of a node just judged quiet (its newest sample arrived at
    ``received``) answers CLEAR or None as long as the node's status and interval stay as they
    are (0: judge it again next tick, a rule without ``clear_for``)."""
    until = float("inf")
    for _, _, p, _, rule in nm.rules[STATUS]:
        if rule.clear_for is None:
            return 0.0
        until = min(until, received + rule.clear_for(node, p))
    return until
