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
