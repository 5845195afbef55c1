"""What the GPU processes' job and container ids mean, asked of each node over its existing
connection and cached: never per sample.

The probe names each GPU process's Slurm job and container (``node/probe/attribution.py``);
this asks the node, through the one command seam (``Runner.run_command``), what they are —
``scontrol show job -o ID`` once per job per minute, ``docker inspect`` (else ``podman
inspect``) or ``crictl inspect`` once per container per minute — and keeps the answers on the
node's state (``NodeState.jobs`` / ``.containers``) for the screens, the alerts, the snapshot
and the exporter. A node without the tool says so once and is not asked again; a socket that
only root may use is asked through ``sudo -n`` and a refusal names the sudoers line once.

It runs beside the transports (``run(sink)``) and serves no node of its own (``names`` is
empty): ``dltui.wiring`` adds it to the SSH and local fleets.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from dltui.core.attribution import (
    ContainerInfo,
    JobInfo,
    parse_crictl_inspect,
    parse_docker_inspect,
    parse_scontrol_job,
)
from dltui.core.models import NodeEvent
from dltui.core.state import FleetState, NodeState
from dltui.node.schema import SUDO, sudo_refused

from .base import Sink
from .command import CommandResult, Runner

LOOKUP_EVERY_S = 60.0  # a job's or a container's facts are asked at most once a minute
SCAN_SLICE = 256  # nodes looked at between yields to the event loop (well under a millisecond)
SCAN_EVERY_S = 1.0  # how often the newest samples are looked at for new ids (no command unless due)
LOOKUP_TIMEOUT_S = 10.0
# Where each runtime's containers are asked about, in order (the "docker, else podman").
ENGINES = {
    "docker": ("docker", "podman"),
    "podman": ("podman", "docker"),
    "containerd": ("crictl",),
    "crio": ("crictl",),
    "cri": ("crictl",),
}
_NEEDS_ROOT = ("permission denied", "Permission denied", "connect: permission")


class AttributionLookups:
    """Looks up the jobs and containers of every node's GPU processes; see the module doc."""

    names: list[str] = []  # no node of its own (wiring.Fleet.lookups, beside the transports)

    def __init__(
        self,
        state: FleetState,
        runner: Runner,
        nodes: Sequence[str],
        clock: Callable[[], float] = time.monotonic,
        scan_every_s: float = SCAN_EVERY_S,
    ):
        self.state = state
        self.runner = runner
        self.nodes = list(nodes)
        self.clock = clock
        self.scan_every_s = scan_every_s
        self.asked: dict[tuple[str, str], float] = {}  # (node, "job:ID" | "ctr:ID") -> when
        self.missing: set[tuple[str, str]] = set()  # (node, tool) said once, never asked again
        self.sudo: set[tuple[str, str]] = set()  # (node, tool) whose socket needs root
        self.lookups = 0  # commands sent, for the benchmark and the tests

    async def run(self, sink: Sink) -> None:
        while True:
            await self.scan(sink)
            await asyncio.sleep(self.scan_every_s)

    async def scan(self, sink: Sink) -> None:
        """One pass over the nodes' newest samples: ask about what is new or a minute old.

        What is due is decided in plain loops, SCAN_SLICE nodes between yields to the event loop;
        only a node with a lookup due gets a coroutine. A task for every node of 2,048 each
        second held the screen's loop for 10-20 ms at once, keys waiting behind it."""
        due = []
        try:
            for i, name in enumerate(self.nodes):
                if i and i % SCAN_SLICE == 0:
                    await asyncio.sleep(0)
                lookup = self.refresh_due(name, sink)
                if lookup is not None:
                    due.append(lookup)
        except asyncio.CancelledError:
            for lookup in due:  # never started: closed, so no "never awaited" warning at exit
                lookup.close()
            raise
        if due:
            await asyncio.gather(*due)

    async def refresh(self, name: str, sink: Sink) -> None:
        """One node's pass (what ``scan`` does for each node)."""
        lookup = self.refresh_due(name, sink)
        if lookup is not None:
            await lookup

    def refresh_due(self, name: str, sink: Sink) -> Coroutine[Any, Any, None] | None:
        """Forget what no GPU process names any more; the node's lookups that are due, in one
        coroutine (a node's commands one after the other, as before), or None."""
        node = self.state.nodes.get(name)
        if node is None or node.sample is None:
            return None
        jobs: set[int] = set()
        containers: dict[str, str] = {}
        for g in node.sample.gpus:
            for p in g.processes:
                if p.slurm_job is not None:
                    jobs.add(p.slurm_job)
                if p.container_id:
                    containers[p.container_id] = p.container_runtime or "docker"
        # forget what no GPU process names any more (bounded by the node's processes)
        if node.jobs:
            for job in [j for j in node.jobs if j not in jobs]:
                del node.jobs[job]
        if node.containers:
            for cid in [c for c in node.containers if c not in containers]:
                del node.containers[cid]
        if not jobs and not containers:
            return None
        now = self.clock()
        due_jobs = [job for job in sorted(jobs) if self._due(name, f"job:{job}", now)]
        due_containers = [(c, r) for c, r in containers.items() if self._due(name, f"ctr:{c}", now)]
        if not due_jobs and not due_containers:
            return None
        return self._look_up(name, node, due_jobs, due_containers, sink)

    async def _look_up(
        self, name: str, node: NodeState, jobs: list[int], containers: list[tuple[str, str]], sink: Sink
    ) -> None:
        for job in jobs:
            info = await self.job(name, job, sink)
            if info is not None:
                node.jobs[job] = info
        for cid, runtime in containers:
            cinfo = await self.container(name, cid, runtime, sink)
            if cinfo is not None:
                node.containers[cid] = cinfo

    def _due(self, node: str, key: str, now: float) -> bool:
        last = self.asked.get((node, key))
        if last is not None and now - last < LOOKUP_EVERY_S:
            return False
        self.asked[(node, key)] = now
        return True

    async def job(self, node: str, job: int, sink: Sink) -> JobInfo | None:
        done = await self._run(node, "scontrol", ["scontrol", "show", "job", "-o", str(job)], sink)
        return parse_scontrol_job(done.stdout) if done is not None and done.ok else None

    async def container(self, node: str, cid: str, runtime: str, sink: Sink) -> ContainerInfo | None:
        for tool in ENGINES.get(runtime, ("docker", "podman")):
            if (node, tool) in self.missing:
                continue
            done = await self._run(node, tool, [tool, "inspect", cid], sink)
            if done is None or not done.ok:
                continue
            if tool == "crictl":
                return parse_crictl_inspect(done.stdout, cid)
            return parse_docker_inspect(done.stdout, cid, tool)
        return None

    async def _run(self, node: str, tool: str, argv: list[str], sink: Sink) -> CommandResult | None:
        """``argv`` on ``node`` (through ``sudo -n`` once its socket proved to need root); None
        when the tool is missing or root is refused (each said once)."""
        if (node, tool) in self.missing:
            return None
        if (node, tool) in self.sudo:
            return await self._as_root(node, tool, argv, sink)
        self.lookups += 1
        done = await self.runner.run_command(node, argv, LOOKUP_TIMEOUT_S)
        if done.problem is not None:
            return None  # unreachable or cut off: asked again next minute
        text = done.stderr + done.stdout
        if done.exit_status == 127:  # the shell's "command not found" (or no such file here)
            self._say_once(node, tool, sink, f"{tool} is not on this node: {what(tool)} not shown")
            return None
        if not done.ok and any(w in text for w in _NEEDS_ROOT):
            self.sudo.add((node, tool))
            return await self._as_root(node, tool, argv, sink)
        return done

    async def _as_root(self, node: str, tool: str, argv: list[str], sink: Sink) -> CommandResult | None:
        self.lookups += 1
        done = await self.runner.run_command(node, [SUDO, "-n", *argv], LOOKUP_TIMEOUT_S)
        if sudo_refused([SUDO, *argv], done.stderr):
            user = await self.runner.run_command(node, ["id", "-un"], LOOKUP_TIMEOUT_S)
            who = user.stdout.strip() or "USER"
            self._say_once(
                node, tool, sink,
                f"{tool} needs root here (its socket) and sudo -n refused: {what(tool)} not shown; "
                f"to allow it: {who} ALL=(root) NOPASSWD: /usr/bin/{tool} inspect *",
            )
            return None
        return done

    def _say_once(self, node: str, tool: str, sink: Sink, message: str) -> None:
        self.missing.add((node, tool))
        sink.on_event(
            node,
            NodeEvent(time.time(), "attribution", message, data={"id": f"attribution:{tool}:{message}"}),
        )


def what(tool: str) -> str:
    return "Slurm job names, users and time left" if tool == "scontrol" else "container names and states"
