"""What a rule is and what it may answer.

A rule's check is a pure function of what the engine hands it (a GPU reading with its
remembered context, a node's sample, a node's status, the fleet's facts) and the rule's
parameters. It answers one of:

- ``None``: the signal is not reported here (N/A). N/A never raises and never clears.
- ``CLEAR``: the condition is false and past the hysteresis band: counts toward clearing.
- ``HOLD``: inside the hysteresis band: neither raising nor clearing.
- a ``Finding``: the condition holds at ``level``, with the words for the alert.

Rules never decide *when* an alert opens or closes: the shared ``Condition`` tracker does,
from the rule's timing parameters (``for_s``, ``critical_for_s``, ``for_samples``,
``clear_s``, ``warmup_s``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, get_args

from ..timeline import Severity

# Where a rule looks, which decides when the engine calls it and with what. "Every sample"
# means every few seconds for a slow rule (``Rule.slow``).
Scope = Literal["gpu", "gpus", "node", "facts", "status", "fleet", "event"]
SCOPES: tuple[Scope, ...] = get_args(Scope)
GPU: Scope = "gpu"  # check(gpu_sample, gpu_memory, params) for every GPU of every sample
GPUS: Scope = "gpus"  # check(sample, node_memory, params) -> {gpu_index: answer}, every sample
NODE: Scope = "node"  # check(sample, node_memory, params) -> answer for the node, every sample
FACTS: Scope = "facts"  # check(gpu_facts, params) for every GPU when a node's facts arrive
STATUS: Scope = "status"  # check(node_state, node_memory, now, params) on every redraw tick
FLEET: Scope = "fleet"  # check(groups, params) -> {node_name: answer} when any node's facts change
EVENT: Scope = "event"  # answers come from on_event when a consumed event arrives (observe_event)


class Verdict:
    """A finding-less answer; compare with ``is``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name

    # Compared with ``is``: a copy (a deep-copied rule memory holding its last answer) or an
    # unpickled one must be the same object.
    def __copy__(self) -> Verdict:
        return self

    def __deepcopy__(self, memo: dict) -> Verdict:
        return self

    def __reduce__(self) -> str:
        return self.name  # a module global of this name


CLEAR = Verdict("CLEAR")
NVIDIA_ONLY = ("nvidia",)  # clock-event reasons, row remapping, the T.Limit margin
HOLD = Verdict("HOLD")
# The signals this rule needs are not reported on this GPU: n/a, even from a rule whose None
# means "not judged this time" (none_is_timing).
NOT_REPORTED = Verdict("NOT_REPORTED")


class Finding(NamedTuple):
    """The condition holds. The alert's message is built from these parts as
    ``what[ for 40s][ (share % of the time)][; detail][ (snapshot note)][ — action]``."""

    level: Severity
    what: str  # the condition with its numbers: "core 87 °C ≥ 85 °C"
    action: str = ""  # the next step: "check airflow and fans"
    detail: str = ""  # more evidence in words
    evidence: dict[str, Any] = {}  # numbers behind the words, for --json (never mutated)
    lasting: bool = True  # False for events (an XID): no "for 40s"
    immediate: bool = False  # counter evidence (a rise in an integral): skip the minimum duration
    # False when the timeline already records this event in its own words (a status change):
    # the alert is shown, its opening and closing are not written a second time.
    on_timeline: bool = True
    # The share of that time (0–1) the condition was in force, where a counter measures it
    # (seconds of thermal slowdown per second): "for 2m31s (100 % of the time)".
    share: float | None = None


def delta(now: int | float | None, before: int | float | None) -> int | float | None:
    """Rise of a cumulative counter; None when unknown or reset (a reset is not a rise)."""
    if now is None or before is None or now < before:
        return None
    return now - before


def rise_since_last(mem: Any, name: str, now: int | float | None) -> int | float | None:
    """How much the GPU counter ``name`` grew since the sample the rule saw last time."""
    prev = mem.prev
    return delta(now, getattr(prev, name)) if prev is not None else None


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    scope: Scope
    check: Callable[..., Any]
    defaults: dict[str, Any] = field(default_factory=dict)
    doc: str = ""
    # Parameters whose values must rise in this order (a warning below its critical, a clear
    # level below its trigger): the config is refused otherwise.
    ascending: tuple[str, ...] = ()
    # Judged every few seconds rather than every sample: rules whose minimum duration is tens
    # of seconds, or whose inputs the probe refreshes slowly (ECC, remaps, replays).
    slow: bool = False
    # None from this rule can also mean "not judged this time" (a warm-up, a window still
    # filling), so it does not mark the rule n/a on the hardware.
    none_is_timing: bool = False
    # What the engine and the UI ask the rule instead of knowing rule names:
    # the reading it judges, for the UI to colour by its alerts ("clocks", "pcie", "drives",
    # "kernel", "driver", "cuda", "driver_held", "reboot"; "": none).
    concerns: str = ""
    # GPU rules: the vendors whose concept it judges ("nvidia", "amd", "intel"; a GPU without a
    # vendor is NVIDIA's); () for all. Another vendor's GPU is not judged, nor called n/a: an
    # AMD node is not told that NVIDIA's clock-event reasons are missing, nor the reverse.
    vendors: tuple[str, ...] = ()
    # its alerts record an event, so only the operator retires them (key 'a'), not time.
    acknowledgeable: bool = False
    # a new boot of the node closes its alerts (then on_new_boot forgets what it kept).
    cleared_by_new_boot: bool = False
    # NodeEvent kinds handed to on_event(node_memory, event, gpu, params), once per event
    # (repeats read again after a reconnect are dropped first). It keeps what it needs in
    # rule_state and returns the answer to judge now (EVENT rules; the alert dates from the
    # event), or None to judge it later with the samples.
    consumes: tuple[str, ...] = ()
    on_event: Callable[..., Any] | None = None
    # STATUS rules: clear_for(node, params) -> seconds after the node's newest sample during
    # which the check can only answer CLEAR or None while the node's status stays the same
    # (inf: until it changes). The engine skips judging a quiet node until then: a fleet of
    # thousands is judged on every redraw, and almost every node is quiet. A newer sample
    # must never shorten that time (the checks read the age of the newest sample), so the
    # engine keeps skipping while the samples stream in.
    clear_for: Callable[..., float] | None = None
    # on_facts(node_memory, now): the node's facts arrived or changed.
    on_facts: Callable[..., None] | None = None
    # on_acknowledge(node_memory, gpu): the operator retired this rule's alert on ``gpu``.
    on_acknowledge: Callable[..., None] | None = None
    # on_new_boot(node_memory): the node booted again (with cleared_by_new_boot).
    on_new_boot: Callable[..., None] | None = None
