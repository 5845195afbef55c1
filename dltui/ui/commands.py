"""The ``:`` command line: ``:sort temp``, ``:filter temp>80``, ``:theme dltui-light``, ``:q``."""

from __future__ import annotations

COMMANDS: dict[str, tuple[str, str]] = {
    "sort": ("sort KEY", "sort the fleet: name, status, temp, util, alerts"),
    "filter": ("filter [EXPR]", "filter the fleet (no EXPR: clear)"),
    "compact": ("compact", "switch between rows and the compact view"),
    "node": ("node NAME", "open a node"),
    "stack": ("stack", "the software stack: kernel, driver, CUDA, held, upgrades, reboot"),
    "theme": ("theme NAME", "switch theme (no NAME: list them)"),
    "burnin": ("burnin [DURATION]", "burn-in on the picked (else shown) nodes, default 2h"),
    "attach": ("attach RUN", "follow a running burn-in on the picked (else shown) nodes"),
    "drain": ("drain [REASON]", "drain the node (or the picked nodes) in Slurm; reason prefilled from the worst alert"),
    "resume": ("resume [force]", "resume a node dltui drained (force: another's drain too)"),
    "container": ("container VERB [NAME]", "restart, stop or start the node's training container"),
    "cordon": ("cordon", "kubectl cordon the node (or the picked nodes), on this machine"),
    "uncordon": ("uncordon", "kubectl uncordon the node (or the picked nodes)"),
    "help": ("help", "this help"),
    "quit": ("q, quit", "quit"),
}
_ALIASES = {"q": "quit", "q!": "quit", "?": "help"}


class CommandError(ValueError):
    """A command line that names no command; the message lists the commands."""


def parse(line: str) -> tuple[str, str]:
    """``"sort temp"`` -> ``("sort", "temp")``."""
    verb, _, arg = line.strip().lstrip(":").partition(" ")
    verb = _ALIASES.get(verb, verb)
    if verb not in COMMANDS:
        raise CommandError(f"unknown command {verb!r}; commands: {', '.join(COMMANDS)}")
    return verb, arg.strip()
