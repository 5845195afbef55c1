"""The faults of ``bench/soak.py --lab N --faults K``: K lab nodes crashed and brought back
every wall-clock minute, and whether the dashboard saw each one go and come back.

A fault is ``SshdNode.kill()`` (SIGKILL to the node's sshd and everything it started: the
session and the probe die, the TCP connection is reset, new connections are refused) and,
``down_s`` later, ``SshdNode.start()`` on the same port with the same host key. Which nodes:
a seeded shuffle of the names, taken K at a time in turn (a rotating choice: every node is
crashed as often as the others, and a node is not crashed twice in a row while K <= N/2).

Recovery is read from the screen (``tmux capture-pane``, once a second): a node's row
shows ``● ok`` again after its restart. The screen is what dltui already writes that says a
node is back — its log holds warnings only (connection steps need ``--debug``, which would
change the cost measured), and ``--record`` would add its own writing to the soak's cost.
Rows are found by the node's name, so the fleet's sort order does not matter; the screen
must show every faulted node (16 nodes fit 160x48).
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass, field

from tests.integration.sshd import SshdError, SshdNode

OK_MARK = "● ok"  # dltui.ui.levels.STATUS_GLYPH[OK] and the word: a live node's status cell


@dataclass
class Fault:
    node: str
    killed_at: float
    restart_at: float
    restarted_at: float | None = None
    seen_down: bool = False  # the row left ``ok`` after the kill
    recovered_at: float | None = None  # the row showed ``ok`` again after the restart


@dataclass
class Faults:
    nodes: dict[str, SshdNode]
    per_minute: int
    down_s: float = 15.0
    seed: int = 7
    open: list[Fault] = field(default_factory=list)  # not yet recovered
    done: list[Fault] = field(default_factory=list)
    restart_errors: int = 0

    def __post_init__(self) -> None:
        self._order = sorted(self.nodes)
        random.Random(self.seed).shuffle(self._order)
        self._turn = 0
        self._next_round = 0.0

    def first_round_at(self, when: float) -> None:
        self._next_round = when

    def step(self, now: float, screen: str) -> None:
        """Crash this minute's nodes when a minute has passed, restart those whose down time
        is over, and read the screen for what went and came back."""
        if now >= self._next_round:
            self._next_round = self._next_round + 60.0 if self._next_round else now + 60.0
            for _ in range(self.per_minute):
                name = self._order[self._turn % len(self._order)]
                self._turn += 1
                if any(f.node == name for f in self.open):
                    continue  # still down or not yet seen back: not crashed on top of that
                self.nodes[name].kill()
                self.open.append(Fault(name, now, now + self.down_s))
        ok = ok_nodes(screen, [f.node for f in self.open])
        for fault in list(self.open):
            if fault.restarted_at is None:
                if fault.node not in ok:
                    fault.seen_down = True
                if now >= fault.restart_at:
                    self._restart(fault, now)
            elif fault.node in ok:
                fault.recovered_at = now
                self.open.remove(fault)
                self.done.append(fault)

    def _restart(self, fault: Fault, now: float) -> None:
        node = self.nodes[fault.node]
        node.fixed_port = True  # same port: the client's ssh config names it
        try:
            node.start()
        except SshdError:  # the port still held: try again next step
            self.restart_errors += 1
            return
        fault.restarted_at = now

    def take(self, since: float, until: float) -> dict:
        """This period's faults: made (crashes), recovered (back to ok), recovery times."""
        made = [f for f in [*self.open, *self.done] if since <= f.killed_at < until]
        back = [f for f in self.done if since <= (f.recovered_at or 0) < until]
        return {
            "faults": len(made),
            "seen_down": sum(f.seen_down for f in made),
            "recovered": len(back),
            "recover_s": [
                f.recovered_at - f.restarted_at for f in back if f.recovered_at and f.restarted_at
            ],
            "open": len(self.open),
        }


def ok_nodes(screen: str, names: list[str]) -> set[str]:
    """Which of ``names`` have a row showing ``● ok`` on the screen."""
    found = set()
    for line in screen.splitlines():
        for name in names:
            if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", line) and OK_MARK in line:
                found.add(name)
    return found


def fd_count(pid: int) -> int:
    """Open file descriptors of ``pid`` (sockets, pipes, files): what leaks if a dropped
    connection's channel or a restarted node's socket is never closed."""
    return len(os.listdir(f"/proc/{pid}/fd"))
