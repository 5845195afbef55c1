#!/usr/bin/env python3
"""Print what the running environment installed that differs from the lock: one line a package,
``name: locked -> installed`` (``make test-latest`` runs it in its fresh, unlocked venv, so the
lines are what moved upstream since the lock was made).

    python scripts/lock_drift.py constraints.txt

Only the lock's lines whose markers hold for this Python count. Exit 0 always: a drift is
news to read, not a failure (the suite that runs next is the judge).
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def locked(path: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate():
            continue
        (spec,) = req.specifier  # the lock pins each package with ==
        pins[canonicalize_name(req.name)] = spec.version
    return pins


def installed() -> dict[str, str]:
    return {canonicalize_name(d.metadata["Name"]): d.version for d in metadata.distributions()}


def main(argv: list[str]) -> int:
    pins, now = locked(Path(argv[0])), installed()
    lines = [f"{name}: {pins[name]} -> {now[name]}" for name in sorted(pins) if name in now and now[name] != pins[name]]
    lines += [f"{name}: (not locked) -> {now[name]}" for name in sorted(set(now) - set(pins) - {"dltui"})]
    print("\n".join(lines) if lines else "nothing: the newest allowed versions are the locked ones")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
