"""Action settings and what every action answers (typed results, never exceptions)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dltui.config import Config, ConfigError
from dltui.core.models import UnitSample

from .commands import PRIVILEGES, SUDO

# Outcomes, one word each. ``ok`` is the only success.
OK = "ok"
FAILED = "failed"  # ran, and the node says it did not work (or verification failed)
REFUSED = "refused"  # refused here before anything was sent (read-only, bad name, no --yes)
NOT_PERMITTED = "not-permitted"  # sudo or polkit said no; the message says how to allow it
UNREACHABLE = "unreachable"  # no connection to the node
TIMEOUT = "timeout"  # the remote command hung and was cut off


@dataclass(frozen=True)
class ActionSettings:
    read_only: bool = False
    privilege: str = SUDO  # "sudo" or "polkit"
    timeout_s: float = 90.0  # the blocking systemctl call, cut off on the node too
    settle_s: float = 10.0  # a restarted unit must stay active this long, with no NRestarts rise
    start_wait_s: float = 30.0  # how long a restarted unit may take to become active
    signal_wait_s: float = 5.0  # how long a signalled process may take to exit
    query_timeout_s: float = 15.0  # reading state and journals
    poll_s: float = 0.25
    # Who asked, when not the terminal this runs in: ``dltui serve`` hands each browser tab's
    # dashboard the browser's address; every audit record of that dashboard carries it.
    origin: str | None = None

    @classmethod
    def from_config(cls, cfg: Config | None) -> ActionSettings:
        if cfg is None:
            return cls()
        table: dict[str, Any] = dict(getattr(cfg, "actions", {}) or {})
        where = f"{cfg.source or 'config'}: [actions]"
        privilege = table.pop("privilege", SUDO)
        if privilege not in PRIVILEGES:
            raise ConfigError(
                f"{where} privilege = {privilege!r}: expected one of {', '.join(PRIVILEGES)}"
            )
        numbers: dict[str, Any] = {}  # floats, by field name
        for key in ("timeout_s", "settle_s", "start_wait_s", "signal_wait_s", "query_timeout_s"):
            if key in table:
                value = table.pop(key)
                if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                    raise ConfigError(
                        f"{where} {key} = {value!r}: expected a positive number of seconds"
                    )
                numbers[key] = float(value)
        if table:
            raise ConfigError(
                f"{where} unknown keys {sorted(table)} "
                "(known: privilege, timeout_s, settle_s, start_wait_s, signal_wait_s, "
                "query_timeout_s)"
            )
        return cls(read_only=cfg.read_only, privilege=privilege, **numbers)


@dataclass(frozen=True)
class ActionResult:
    """One node's answer to one action."""

    node: str
    action: str  # "restart dl_train.service", "signal TERM 4242", "status dl_train.service"
    outcome: str  # OK, FAILED, REFUSED, NOT_PERMITTED, UNREACHABLE, TIMEOUT
    message: str  # plain words
    argv: tuple[str, ...] | None = None  # the exact change sent; None when nothing was
    duration_s: float = 0.0
    details: list[str] = field(default_factory=list)  # journal lines, the sudoers line to add
    unit: UnitSample | None = None  # the unit's state after the action (unit actions)

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
