"""The action keys the fleet and node screens share, one list so they cannot drift apart: the
unit (R / X / U), its training container (the same letters in lower case: on the fleet, the
cursor's node), and the scheduler (D / E drain / resume in Slurm, O / N cordon / uncordon in
Kubernetes; on the fleet, the picked nodes or the cursor's). Each screen's ``check_action``
offers a key only where it can act."""

from __future__ import annotations

from textual.binding import Binding

ACTION_KEYS = [
    Binding("R", "unit('restart')", "Restart unit"),
    Binding("X", "unit('stop')", "Stop unit", show=False),
    Binding("U", "unit('start')", "Start unit", show=False),
    Binding("r", "container('restart')", "Restart ctr"),
    Binding("x", "container('stop')", "Stop ctr", show=False),
    Binding("u", "container('start')", "Start ctr", show=False),
    Binding("D", "sched('drain')", "Drain"),
    Binding("E", "sched('resume')", "Resume", show=False),
    Binding("O", "sched('cordon')", "Cordon"),
    Binding("N", "sched('uncordon')", "Uncordon", show=False),
]
