"""Taking a node out of the scheduler's hands, and back: Slurm drain / resume over the node's
own connection, Kubernetes cordon / uncordon with the operator's kubectl on this machine.

The same path as every change (``service.py``): refused under --read-only, validated, the exact
command shown before it runs (``--yes`` / the dashboard's dialog), audited intent-first, then
verified by reading the node back (DRAIN/DRAINING with that reason; no DRAIN after a resume;
``unschedulable`` as asked). The reason dltui writes is ``dltui: TEXT [operator]``; ``resume``
undoes only such a drain unless forced — a drain someone else set is theirs to undo (LBNL NHC's
rule). As neither root nor SlurmUser, scontrol runs under ``sudo -n`` (never a password
prompt; a refusal names the sudoers line).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from dltui.core.scheduler import KubeNode, SlurmNode, drain_reason, slurm_name_for
from dltui.transport.command import CommandResult, Runner, shell_line
from dltui.transport.scheduler import (
    NO_SLURM,
    SlurmIdentity,
    read_kube_node,
    read_slurm_identity,
    read_slurm_node,
    slurm_problem,
    valid_node_name,
)

from . import commands as cmd
from .audit import _local_user as local_user  # noqa: PLC2701 - one notion of "who acts"
from .authorise import sudo_denied
from .policy import FAILED, NOT_PERMITTED, OK, REFUSED, TIMEOUT, ActionResult
from .run import Attempt
from .service import ActionService
from .validate import READ_ONLY

SLURM_VERBS = ("drain", "resume")
KUBE_VERBS = ("cordon", "uncordon")
VERIFY_S = 10.0  # the controller answers within a second; a busy one gets this long


class SchedulerActions:
    """drain / resume / cordon / uncordon, on the runner, settings and audit of ``service``;
    ``local`` runs kubectl on this machine."""

    def __init__(self, service: ActionService, local: Runner | None = None, kubectl: Sequence[str] = ("kubectl",)):
        self.service = service
        self.settings = service.settings
        self.local = local
        self.kubectl = tuple(kubectl)
        self.operator = local_user()
        self._slurm: dict[str, SlurmIdentity] = {}

    # -- Slurm --------------------------------------------------------------------------------

    async def _slurm_identity(self, node: str) -> SlurmIdentity | CommandResult:
        known = self._slurm.get(node)
        if known is not None:
            return known
        got = await read_slurm_identity(self.service.runner, node, self.settings.query_timeout_s)
        if isinstance(got, SlurmIdentity):
            self._slurm[node] = got
        return got

    async def plan_slurm(
        self, node: str, verb: str, reason: str = "", force: bool = False, slurm_node: str | None = None
    ) -> tuple[list[str], SlurmNode, str] | ActionResult:
        """(the exact argv, the node's state now, the Slurm name) or why not; nothing audited."""
        attempt = Attempt(None, node, verb)
        return await self._plan_slurm(attempt, verb, reason, force, slurm_node)

    async def _plan_slurm(
        self, attempt: Attempt, verb: str, reason: str, force: bool, slurm_node: str | None
    ) -> tuple[list[str], SlurmNode, str] | ActionResult:
        node = attempt.node
        if self.settings.read_only:
            return attempt.refuse(READ_ONLY)
        if verb not in SLURM_VERBS:
            return attempt.refuse(f"unknown scheduler action {verb!r}")
        if verb == "drain" and not " ".join(reason.split()):
            return attempt.refuse("a drain needs a reason (--reason TEXT): it is what the next person reads")
        who = await self.service.queries.identity(node)
        if isinstance(who, CommandResult):
            return attempt.trouble(who)
        ident = await self._slurm_identity(node)
        if isinstance(ident, CommandResult):
            return attempt.trouble(ident)
        if not ident.scontrol:
            return attempt.done(FAILED, NO_SLURM, None)
        name = slurm_name_for(ident.hostname, slurm_node)
        if not valid_node_name(name):
            return attempt.refuse(f"not a Slurm node name: {name!r} (set [groups.NAME] slurm_node)")
        attempt.action = f"{verb} {name}"
        before = await read_slurm_node(self.service.runner, node, name, self.settings.query_timeout_s)
        if isinstance(before, CommandResult):
            if before.problem is not None:
                return attempt.trouble(before)
            return attempt.done(FAILED, slurm_problem(before), None)
        if verb == "resume":
            if not before.drained:
                return attempt.refuse(f"{name} is not drained ({before.describe()}): nothing to resume")
            if not before.drained_by_dltui and not force:
                by = f" by {before.reason_by}" if before.reason_by else ""
                return attempt.refuse(
                    f"{name} was drained{by} for {before.reason or 'no reason given'!r}, not by dltui: "
                    "a drain someone else set is theirs to undo (--force to resume it anyway)"
                )
            base = ["scontrol", "update", f"NodeName={name}", "State=RESUME"]
        else:
            written = drain_reason(reason, self.operator)
            base = ["scontrol", "update", f"NodeName={name}", "State=DRAIN", f"Reason={written}"]
        privileged = who.root or (ident.slurm_user != "" and who.user == ident.slurm_user)
        argv = base if privileged else [cmd.SUDO, "-n", ident.scontrol, *base[1:]]
        return argv, before, name

    async def slurm(
        self,
        node: str,
        verb: str,
        reason: str = "",
        force: bool = False,
        confirmed: bool = False,
        slurm_node: str | None = None,
    ) -> ActionResult:
        """Drain (with ``reason``) or resume ``node`` in Slurm."""
        attempt = Attempt(self.service.audit, node, verb)
        planned = await self._plan_slurm(attempt, verb, reason, force, slurm_node)
        if isinstance(planned, ActionResult):
            return planned
        argv, before, name = planned
        if not confirmed:
            return attempt.refuse(f"changes need confirmation (--yes); would run: {shell_line(argv)}")
        sent = cmd.with_timeout(argv, self.settings.timeout_s)
        pending = attempt.declare(sent)
        if isinstance(pending, ActionResult):
            return pending
        with pending:
            res = await attempt.send(self.service.runner, sent, self.settings.timeout_s + 5)
            if res.problem is not None:
                return attempt.trouble(res, argv=sent)
            if res.exit_status == 124:
                return attempt.done(TIMEOUT, f"no answer within {self.settings.timeout_s:g} s: cut off", sent)
            if not res.ok:
                if sudo_denied(argv, res):
                    who = await self.service.queries.identity(node)
                    line = cmd.sudoers_line(who, argv) if isinstance(who, cmd.Identity) else shell_line(argv)
                    return attempt.done(
                        NOT_PERMITTED,
                        f"sudo refused ({res.first_error_line()}); dltui never types a password. "
                        "To allow exactly this command, add with visudo:",
                        sent,
                        details=[line],
                    )
                return attempt.done(FAILED, f"scontrol update failed: {res.first_error_line()}", sent)
            want = argv[-1].partition("=")[2] if verb == "drain" else ""
            return await self._verify_slurm(attempt, verb, name, want, sent)

    async def _verify_slurm(self, attempt: Attempt, verb: str, name: str, reason: str, sent: list[str]) -> ActionResult:
        deadline = time.monotonic() + VERIFY_S
        last: SlurmNode | CommandResult | None = None
        while True:
            last = await read_slurm_node(self.service.runner, attempt.node, name, self.settings.query_timeout_s)
            if isinstance(last, SlurmNode):
                if verb == "drain" and last.drained and last.reason == reason:
                    return attempt.done(OK, f"{name} reads {last.state} ({last.word}): {last.reason}", sent)
                # Slurm marks a resumed node NOT_RESPONDING until its slurmd answers the next
                # ping (a second or two): wait for that, then say what it reads either way
                settled = not last.down or time.monotonic() >= deadline - VERIFY_S / 2
                if verb == "resume" and not last.drained and settled:
                    return attempt.done(OK, f"{name} resumed: reads {last.state} ({last.word})", sent)
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(self.settings.poll_s)
        seen = last.describe() if isinstance(last, SlurmNode) else slurm_problem(last) if last else "nothing"
        expect = f"DRAIN with reason {reason!r}" if verb == "drain" else "no DRAIN"
        return attempt.done(FAILED, f"sent, but {name} does not read {expect}: it reads {seen}", sent)

    # -- Kubernetes ---------------------------------------------------------------------------

    async def kube(self, node: str, verb: str, kube_node: str, confirmed: bool = False) -> ActionResult:
        """Cordon or uncordon ``kube_node`` (the Kubernetes name of dashboard node ``node``)."""
        attempt = Attempt(self.service.audit, node, f"{verb} {kube_node}")
        planned = self.plan_kube(attempt, verb, kube_node)
        if isinstance(planned, ActionResult):
            return planned
        argv, local = planned
        if not confirmed:
            return attempt.refuse(f"changes need confirmation (--yes); would run here: {shell_line(argv)}")
        pending = attempt.declare(argv)
        if isinstance(pending, ActionResult):
            return pending
        with pending:
            res = await attempt.send(local, argv, self.settings.timeout_s)
            if res.problem is not None:
                return attempt.trouble(res, argv=argv)
            if not res.ok:
                return attempt.done(FAILED, f"kubectl {verb} failed: {res.first_error_line()}", argv)
            want = verb == "cordon"
            got = await read_kube_node(local, self.kubectl, kube_node, self.settings.query_timeout_s)
            if isinstance(got, KubeNode) and got.unschedulable == want:
                return attempt.done(OK, f"{kube_node} reads {got.describe()}", argv)
            seen = got.describe() if isinstance(got, KubeNode) else got
            return attempt.done(FAILED, f"sent, but {kube_node} does not read unschedulable={want}: {seen}", argv)

    def plan_kube(self, attempt: Attempt, verb: str, kube_node: str) -> tuple[list[str], Runner] | ActionResult:
        if self.settings.read_only:
            return attempt.refuse(READ_ONLY)
        if verb not in KUBE_VERBS:
            return attempt.refuse(f"unknown scheduler action {verb!r}")
        if not valid_node_name(kube_node):
            return attempt.refuse(f"not a Kubernetes node name: {kube_node!r}")
        if self.local is None:
            return attempt.done(FAILED, "kubectl runs on this machine, and this view has no local runner", None)
        return [*self.kubectl, verb, kube_node], self.local


def preview_line(planned: tuple[list[str], SlurmNode, str] | ActionResult) -> str:
    """What a confirm dialog shows: the exact command, or in brackets why it will not run."""
    if isinstance(planned, ActionResult):
        word = "refused" if planned.outcome == REFUSED else planned.outcome
        return f"({word}: {planned.message})"
    return shell_line(planned[0])


__all__ = ["KUBE_VERBS", "OK", "SLURM_VERBS", "SchedulerActions", "preview_line"]
