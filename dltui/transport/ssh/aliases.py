"""The host aliases an SSH config names (``Host gpu01 gpu02``), for shell completion and for
telling a mistyped subcommand from a host. Standard library only, so a completion stays fast;
the connections themselves read the config with asyncssh's parser (``config.py``).

Only plain names count: ``Host gpu*`` or ``Host !bastion`` name no host by themselves.
``Include`` is followed (relative paths from ``~/.ssh``, globs), at most 8 deep.
"""

from __future__ import annotations

import glob
import os
import shlex

MAX_DEPTH = 8
MAX_ALIASES = 20000  # a generated config may be large; completion needs no more


def default_path() -> str:
    return os.path.join(os.path.expanduser("~"), ".ssh", "config")


def host_aliases(path: str | None = None) -> list[str]:
    """Plain ``Host`` names in the config (``-F path``, else ``~/.ssh/config``), in file order,
    each once; [] when there is no readable config."""
    seen: dict[str, None] = {}
    _read(os.path.expanduser(path) if path else default_path(), seen, 0)
    return list(seen)


def _read(path: str, seen: dict[str, None], depth: int) -> None:
    if depth > MAX_DEPTH or len(seen) >= MAX_ALIASES:
        return
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return
    for line in lines:
        words = _words(line)
        if not words:
            continue
        keyword, args = words[0].lower(), words[1:]
        if "=" in keyword:  # Host=gpu01
            keyword, _, first = keyword.partition("=")
            args = [first, *args] if first else args
        if keyword == "host":
            for name in args:
                if name and not any(c in name for c in "*?!") and len(seen) < MAX_ALIASES:
                    seen.setdefault(name, None)
        elif keyword == "include":
            for pattern in args:
                full = os.path.expanduser(pattern)
                if not os.path.isabs(full):
                    full = os.path.join(os.path.expanduser("~"), ".ssh", full)
                for included in sorted(glob.glob(full)):
                    _read(included, seen, depth + 1)


def _words(line: str) -> list[str]:
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return []
    try:
        return shlex.split(stripped, comments=True)
    except ValueError:  # unbalanced quotes: ssh refuses the file; here it names nothing
        return []
