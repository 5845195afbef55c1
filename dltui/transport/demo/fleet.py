"""The demo transport: the simulated fleet stepped by hand (``step_into``) or streamed live
(``run``, after simulating the recent past), statuses and events as a real fleet sends them.

Commands (the dashboard's actions) are answered by a hook the demo is given (``commands``):
the transport knows its nodes, not what the actions send to them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from dltui.core import status as st
from dltui.core.models import NodeEvent
from dltui.node.schema import interval_event, oom_event

from ..base import Sink
from ..command import CommandResult, TakesCommands, unreachable
from .node import SimNode
from .scenarios import CRASH_EVERY, DOWN, EPOCH, GIB, OOM, OOM_KILL_STEP, RETRYING, UP

# ``dltui demo`` opens on a story already under way: the simulator first runs this many steps
# into the past, so the hot GPU has throttled for a minute, the OOM kill is on the timeline and
# the flapping node is away (back some 20 s after start: the story moves on).
PREFILL_STEPS = 170
PREFILL_NODE_SAMPLES = 20_000  # a large fleet gets fewer steps: start-up stays a few seconds
PREFILL_SLICE_S = 0.001  # simulating the past yields to the event loop this often: a frame's
# every step waits behind one slice at most (16 node-samples a slice held 512 nodes' start-up
# frames at p95 60-100 ms: 6 ms a slice, the more on a busy machine)
NODES_PER_SLOT = 2  # live: at most this many nodes' samples at once (a frame waits behind a slot)

# A simulated node's answer to a command: (node, argv without timeout/sudo, now) -> (output,
# exit status).
CommandHook = Callable[[SimNode, list[str], float], tuple[str, int]]


class DemoTransport(TakesCommands):
    """A simulated fleet of H100 nodes. ``names`` are ``gpu01``, ``gpu02``, … in order."""

    simulated = True  # actions on it are simulated (run_command), and say so

    def __init__(
        self,
        nodes: int = 12,
        gpus: int = 8,
        seed: int = 7,
        interval_s: float = 1.0,
        commands: CommandHook | None = None,
    ):
        digits = max(2, len(str(nodes)))
        self.names = [f"gpu{i:0{digits}d}" for i in range(1, nodes + 1)]
        self.interval_s = interval_s
        self.commands = commands
        self.now = EPOCH
        self.step_count = 0
        self._nodes = [SimNode(name, i, seed, gpus) for i, name in enumerate(self.names)]
        self._started = False
        self._sink: Sink | None = None  # set when the fleet starts: where + / - are said
        self._live = False
        self._boot_time = EPOCH

    @property
    def prefill_steps(self) -> int:
        """How many steps of past ``run`` simulates before streaming."""
        return max(1, min(PREFILL_STEPS, PREFILL_NODE_SAMPLES // max(1, len(self._nodes))))

    def clock(self) -> float:
        """The fleet's time: simulated while stepping (by hand, or the prefilled past), the
        wall clock once ``run`` streams. Pass it to ``FleetState(clock=...)``."""
        return time.time() if self._live else self.now

    def step_into(self, sink: Sink, steps: int = 1) -> None:
        """Advance the whole fleet ``steps`` intervals at once, without waiting."""
        self._start(sink)
        for _ in range(steps):
            self.step_count += 1
            self.now += self.interval_s
            for node in self._nodes:
                self._step_node(sink, node, self.now)

    def set_interval(self, interval_s: float) -> None:
        """The simulated probes take it at once, and say so as real ones do."""
        self.interval_s = interval_s
        if self._sink is not None:
            event = NodeEvent.from_dict(interval_event(time.time(), interval_s))
            for node in self._nodes:
                self._sink.on_event(node.name, event)

    async def run(self, sink: Sink) -> None:
        """Simulate ``prefill_steps`` of the past, then stream until cancelled, nodes spread over
        the interval as real streams would arrive."""
        # Samples carry the wall clock (the past ones the wall clock minus their age), so ages,
        # timeline and rule durations agree with what streams afterwards.
        self.now = time.time() - self.prefill_steps * self.interval_s
        self._start(sink)
        slice_ends = time.perf_counter() + PREFILL_SLICE_S
        for _ in range(self.prefill_steps):
            self.step_count += 1
            self.now += self.interval_s
            for node in self._nodes:
                self._step_node(sink, node, self.now)
                if time.perf_counter() >= slice_ends:
                    await asyncio.sleep(0)
                    slice_ends = time.perf_counter() + PREFILL_SLICE_S
        self._live = True
        # Small groups, as independent streams arrive: one big batch would hold the screen's
        # event loop for tens of milliseconds on a large fleet.
        # At least one slot: a fleet of no nodes still waits each interval instead of spinning.
        slots = max(1, min(len(self._nodes), 10), -(-len(self._nodes) // NODES_PER_SLOT))
        next_tick = time.monotonic()
        while True:
            self.step_count += 1
            for k in range(slots):
                self.now = time.time()
                for node in self._nodes[k::slots]:
                    self._step_node(sink, node, self.now)
                next_tick += self.interval_s / slots
                await asyncio.sleep(max(0.0, next_tick - time.monotonic()))

    def _start(self, sink: Sink) -> None:
        if self._started:
            return
        self._started = True
        self._sink = sink
        self._boot_time = self.now - 19 * 86400
        for node in self._nodes:
            node.boot_time = self._boot_time
            node.unit.started_at = self.now - 6 * 3600.0
            sink.on_status(node.name, st.CONNECTING)
            sink.on_hello(node.name, node.facts(self._boot_time), self.interval_s)
            sink.on_status(node.name, st.OK)

    def _step_node(self, sink: Sink, node: SimNode, now: float) -> None:
        link = node.link_at(self.step_count)
        if link != node.link:
            if link == DOWN:
                sink.on_status(
                    node.name, st.UNREACHABLE, "connection lost: server not responding to keepalive"
                )
            elif link == RETRYING:
                sink.on_status(node.name, st.RECONNECTING, st.with_retry("no route to host", "every 5 s"))
            else:
                sink.on_hello(node.name, node.facts(self._boot_time), self.interval_s)
                sink.on_status(node.name, st.OK)
            node.link = link
        if node.crashloops and self.step_count % CRASH_EVERY == 0:
            node.unit.restart(now, crashed=True)  # Restart=always brings it back, NRestarts rises
        if link == UP:
            sink.on_sample(node.name, node.sample(now, self.interval_s))
        if node.scenario == OOM and self.step_count == OOM_KILL_STEP:
            sink.on_event(node.name, _oom_kill(now, self.step_count))

    # -- simulated actions ---------------------------------------------------------------------

    async def run_command(self, node: str, argv: Sequence[str], timeout_s: float) -> CommandResult:
        """What a node would answer, through the hook; nothing leaves this process."""
        await asyncio.sleep(0.05)
        args = list(argv)
        n = next((x for x in self._nodes if x.name == node), None)
        if n is None or n.link != UP:
            return unreachable(args, f"{node} is not connected (demo)")
        if self.commands is None:
            return unreachable(args, "this demo fleet was started without simulated actions")
        if args[:1] == ["timeout"]:
            args = args[4:]
        if args[:2] == ["sudo", "-n"]:
            args = args[2:]
        out, status = self.commands(n, args, self.now if not self._live else time.time())
        return CommandResult(tuple(args), status, out, "" if status == 0 else out)


def _oom_kill(now: float, step: int) -> NodeEvent:
    """The kernel's OOM kill of a DataLoader worker holding 31 GiB, built as the probe builds
    it from the kernel's line."""
    kill = oom_event(now, 48213, "pt_data_worker:3", False, 31 * GIB, line_id=f"demo-boot/{step}")
    return NodeEvent.from_dict(kill)
