"""The burn-in and the scheduler: never load a node that is running someone's work, and take a
node that failed out of service.

Before the start (``busy``): a node whose Slurm state is alloc / mix / completing, or whose GPUs
hold a process of another user, is refused unless ``--force`` — naming the jobs (``squeue``) or
the processes and their owners, so the operator knows whose work it would have wrecked.
After the verdict (``drain_failed``, ``--drain-on-fail``): each node judged FAIL is drained in
Slurm through the one action path (``dltui.actions.scheduler``: audited, verified), its reason
the verdict's one line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from dltui.actions.policy import ActionResult
from dltui.actions.scheduler import SchedulerActions
from dltui.core.text import clean
from dltui.transport.command import CommandResult, Runner
from dltui.transport.scheduler import read_slurm_identity, read_slurm_node, valid_node_name

from .items import FAIL, NodeVerdict

TIMEOUT_S = 15.0
_APPS_ARGV = ("nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader")


async def _run(runner: Runner, node: str, argv: Sequence[str]) -> CommandResult:
    return await runner.run_command(node, argv, TIMEOUT_S)


async def _slurm_jobs(runner: Runner, node: str, name: str) -> list[str]:
    """``48213 llama-ft (alice)`` for each job Slurm runs on ``name``."""
    res = await _run(runner, node, ["squeue", "-h", "-w", name, "-o", "%i|%j|%u"])
    jobs = []
    for line in res.stdout.splitlines() if res.ok else []:
        parts = clean(line.strip()).split("|")
        if len(parts) == 3 and parts[0]:
            jobs.append(f"{parts[0]} {parts[1]} ({parts[2]})")
    return jobs


async def _foreign_gpu_processes(runner: Runner, node: str) -> list[str]:
    """GPU processes of users other than the one we connect as: ``PID 4242 of alice (job 7)``."""
    apps = await _run(runner, node, _APPS_ARGV)
    pids = [p.strip() for p in apps.stdout.splitlines() if p.strip().isdigit()] if apps.ok else []
    if not pids:
        return []
    me = await _run(runner, node, ["id", "-u"])
    owners = await _run(runner, node, ["ps", "-o", "pid=,uid=,user=", "-p", ",".join(pids)])
    if not me.ok or not owners.ok:
        return []
    found = []
    for line in owners.stdout.splitlines():
        parts = clean(line).split()
        if len(parts) == 3 and parts[1] != me.stdout.strip():
            job = await _run(runner, node, ["scontrol", "pidinfo", parts[0]])
            words = job.stdout.split()
            jid = next((w.split("=", 1)[1] for w in words if w.startswith("JobId=")), "")
            if not jid and job.ok and len(words) > 2 and words[0] == "Slurm" and words[1] == "job":
                jid = words[2].rstrip(",")  # "Slurm job 7 ends at …"
            found.append(f"PID {parts[0]} of {parts[2]}" + (f" (job {clean(jid)})" if jid else ""))
    return found


async def busy(runner: Runner, node: str, slurm_node: str | None = None) -> str | None:
    """Why ``node`` runs someone's work now, or None: Slurm's alloc / mix with its jobs named,
    or GPU processes of another user. A node without Slurm is judged by its GPUs alone."""
    from dltui.core.scheduler import slurm_name_for

    ident = await read_slurm_identity(runner, node, TIMEOUT_S)
    if not isinstance(ident, CommandResult) and ident.scontrol:
        name = slurm_name_for(ident.hostname, slurm_node)
        state = await read_slurm_node(runner, node, name, TIMEOUT_S) if valid_node_name(name) else None
        if state is not None and not isinstance(state, CommandResult) and state.busy:
            jobs = await _slurm_jobs(runner, node, name)
            named = f": job {', job '.join(jobs)}" if jobs else ""
            return f"Slurm has it {state.word} ({state.state}){named}"
    foreign = await _foreign_gpu_processes(runner, node)
    if foreign:
        return "its GPUs hold another user's work: " + ", ".join(foreign)
    return None


async def refusals(runner: Runner, hosts: Sequence[str], slurm_nodes: dict[str, str | None]) -> dict[str, str]:
    """Each host that must not be loaded, with why (``--force`` overrides, said in the line)."""
    whys = await asyncio.gather(*(busy(runner, h, slurm_nodes.get(h)) for h in hosts))
    return {h: f"{why}; not loaded (--force to run anyway)" for h, why in zip(hosts, whys, strict=True) if why}


def fail_reason(verdict: NodeVerdict, run_id: str) -> str:
    """The verdict's one line: ``burn-in RUN FAIL: GPU 3 xid: XID 79 …``."""
    problems = [i for i in verdict.problems() if i.status == FAIL]
    first = problems[0] if problems else None
    gpu = first.gpu if first is not None else None
    if first is not None and gpu is None:  # a GPU's item knows its GPU by the verdict holding it
        gpu = next((g.index for g in verdict.gpus if any(i is first for i in g.items)), None)
    where = f"GPU {gpu} " if gpu is not None else ""
    what = f"{where}{first.check}: {first.evidence}" if first is not None else verdict.headline()
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"burn-in {run_id} FAIL: {what}{more}"


async def drain_failed(
    actions: SchedulerActions, verdicts: Sequence[NodeVerdict], run_id: str, slurm_nodes: dict[str, str | None]
) -> list[ActionResult]:
    """Drain every node judged FAIL (``--drain-on-fail``): confirmed by the flag itself."""
    failed = [v for v in verdicts if v.status == FAIL]
    return list(await asyncio.gather(*(
        actions.slurm(v.node, "drain", fail_reason(v, run_id), confirmed=True, slurm_node=slurm_nodes.get(v.node))
        for v in failed
    )))
