"""A simulated node's training unit, dl_train.service, as systemd would report it."""

from __future__ import annotations

import random

from dltui.core.models import UnitSample

from .scenarios import EPOCH, UNIT


class SimUnit:
    def __init__(self, rng: random.Random, pid: int, active: bool):
        self.rng = rng
        self.main_pid = pid
        self.active = active
        self.restarts = 0
        self.result = "success"
        self.exit_status = 0
        self.invocation = f"{rng.getrandbits(128):032x}"
        self.started_at = EPOCH - 6 * 3600.0  # epoch s; the job has run six hours

    def restart(self, now: float, crashed: bool) -> None:
        if crashed:
            self.restarts += 1
            self.result, self.exit_status = "exit-code", 1
        self.invocation = f"{self.rng.getrandbits(128):032x}"
        self.main_pid += 7
        self.started_at = now
        self.active = True

    def stop(self) -> None:
        self.active = False

    def sample(self, boot_time: float) -> UnitSample:
        return UnitSample(
            UNIT, "loaded", "active" if self.active else "inactive", "running" if self.active else "dead",
            self.result, self.restarts, self.main_pid if self.active else 0, self.exit_status,
            self.invocation if self.active else "", max(0, round((self.started_at - boot_time) * 1e6)),
            None, None, None,
        )

    def show(self, boot_time: float) -> str:
        """``systemctl show`` of the unit, as the node would print it."""
        u = self.sample(boot_time)
        return (
            f"LoadState={u.load_state}\nActiveState={u.active_state}\nSubState={u.sub_state}\nResult={u.result}\n"
            f"NRestarts={u.restarts_total}\nMainPID={u.main_pid}\nExecMainStatus={u.exec_main_status}\n"
            f"InvocationID={u.invocation_id}\nExecMainStartTimestampMonotonic={u.started_monotonic_us}\n"
            "MemoryCurrent=[not set]\nCPUUsageNSec=[not set]\n"
        )
