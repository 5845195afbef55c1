"""Action settings and what every action answers (typed results, never exceptions)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from dltui.config import ActionsSection, Config
from dltui.core.models import UnitSample
from dltui.core.text import clean

# Outcomes, one word each. ``ok`` is the only success.
Outcome = Literal["ok", "failed", "refused", "not-permitted", "unreachable", "timeout"]
OK: Outcome = "ok"
FAILED: Outcome = "failed"  # ran, and the node says it did not work (or verification failed)
REFUSED: Outcome = "refused"  # refused here before anything was sent (read-only, bad name, no --yes)
NOT_PERMITTED: Outcome = "not-permitted"  # sudo or polkit said no; the message says how to allow it
UNREACHABLE: Outcome = "unreachable"  # no connection to the node
TIMEOUT: Outcome = "timeout"  # the remote command hung and was cut off


_DECLARED = ActionsSection()  # [actions] keys: type, range and default in dltui/config.py


@dataclass(frozen=True)
class ActionSettings:
    read_only: bool = False
    privilege: str = _DECLARED.privilege  # "sudo" or "polkit"
    timeout_s: float = _DECLARED.timeout_s  # the blocking systemctl call, cut off on the node too
    settle_s: float = _DECLARED.settle_s  # a restarted unit must stay active this long, no NRestarts rise
    start_wait_s: float = _DECLARED.start_wait_s  # how long a restarted unit may take to become active
    signal_wait_s: float = _DECLARED.signal_wait_s  # how long a signalled process may take to exit
    query_timeout_s: float = _DECLARED.query_timeout_s  # reading state and journals
    poll_s: float = 0.25
    # Who asked, when not the terminal this runs in: ``dltui serve`` hands each browser tab's
    # dashboard the browser's address; every audit record of that dashboard carries it.
    origin: str | None = None

    @classmethod
    def from_config(cls, cfg: Config | None) -> ActionSettings:
        """From the checked config (``[actions]`` and ``read_only``)."""
        if cfg is None:
            return cls()
        a = cfg.actions
        return cls(
            read_only=cfg.read_only,
            privilege=a.privilege,
            timeout_s=a.timeout_s,
            settle_s=a.settle_s,
            start_wait_s=a.start_wait_s,
            signal_wait_s=a.signal_wait_s,
            query_timeout_s=a.query_timeout_s,
        )


@dataclass(frozen=True)
class ActionResult:
    """One node's answer to one action."""

    node: str
    action: str  # "restart dl_train.service", "signal TERM 4242", "status dl_train.service"
    outcome: Outcome
    message: str  # plain words
    argv: tuple[str, ...] | None = None  # the exact change sent; None when nothing was
    duration_s: float = 0.0
    details: list[str] = field(default_factory=list)  # journal lines, the sudoers line to add
    unit: UnitSample | None = None  # the unit's state after the action (unit actions)

    def __post_init__(self) -> None:
        # Messages quote the node (a unit's state, systemctl's and journald's words): whatever
        # shows a result, the dashboard or a script reading the CLI, gets them cleaned.
        object.__setattr__(self, "message", clean(self.message))
        object.__setattr__(self, "details", [clean(line) for line in self.details])

    @property
    def ok(self) -> bool:
        return self.outcome == OK


def exit_code(results: list[ActionResult]) -> int:
    """0 all ok; 1 some failed or were refused; 3 none failed but a node was unreachable."""
    if any(r.outcome not in (OK, UNREACHABLE) for r in results):
        return 1
    if any(r.outcome == UNREACHABLE for r in results):
        return 3
    return 0
