"""The training container(s): the unit's twin, read with the node's own container engine.

``--container NAME`` (or ``--container label=KEY=VALUE``, a label selector) names them; every
``POLL_S`` (15) seconds one ``docker inspect`` answers for all of them (``podman inspect``
where there is no docker), never per sample: an engine CLI is a process and a socket round
trip (~30-80 ms of CPU). A label selector is resolved with one ``ps -a -q --filter label=…``
first. Docker and podman spell ``inspect`` nearly alike; what differs is read both ways
(``HostConfig.RestartPolicy.Name`` is ``""`` in podman for "no"; ``State.Health`` is
``State.Healthcheck`` in older podman; ``Name`` has docker's leading ``/``).

A container that is not there says so in its record (``error``); an engine refusing us
(docker group, rootless socket) is said once as information. Stdlib only, Python 3.8.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from typing import Any, Callable, Dict, Iterable

from ..schema import CONTAINER_FIELDS, inspect_fields
from .problems import Problems

POLL_S = 15.0
TIMEOUT_S = 10.0
ENGINES = ("docker", "podman")
LABEL = "label="

Record = Dict[str, Any]


def container_record(name: str, engine: str, obj: dict[str, Any]) -> Record:
    """One ``container`` record (schema.CONTAINER_FIELDS) from one ``inspect`` object."""
    record = dict(inspect_fields(obj), name=name, engine=engine, error=None)
    return {key: record[key] for key in CONTAINER_FIELDS}


def _missing(name: str, why: str) -> Record:
    return {"name": name, "engine": None, "id": None, "image": None, "state": None, "restart_policy": None,
            "restarts_total": None, "oom_killed": None, "health": None, "exit_code": None, "started_at": None,
            "finished_at": None, "error": why}


def _own_name(obj: dict[str, Any]) -> str:
    name = obj.get("Name")
    return name.lstrip("/") if isinstance(name, str) else ""


class ContainerPoller:
    """Polls the configured containers; see the module docstring."""

    def __init__(
        self,
        wanted: Iterable[str],
        problems: Problems,
        run: Callable[..., Any] = subprocess.run,
        which: Callable[[str], str | None] = shutil.which,
        poll_s: float = POLL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.wanted = list(wanted)
        self.problems = problems
        self.run = run
        self.which = which
        self.poll_s = poll_s
        self.clock = clock
        self.engine: str | None = None
        self.records: list[Record] = []
        self._next = 0.0
        self.polls = 0  # engine calls made (the benchmark's count)

    def sample(self) -> list[Record]:
        now = self.clock()
        if now >= self._next:
            self._next = now + self.poll_s
            self.records = self._poll()
        return self.records

    def refresh(self) -> None:
        """Read again at the next sample (after a restart / stop / start)."""
        self._next = 0.0

    def _call(self, argv: list[str]) -> Any:
        self.polls += 1
        return self.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)

    def _poll(self) -> list[Record]:
        if self.engine is None:
            self.engine = next((e for e in ENGINES if self.which(e)), "")
        if not self.engine:
            return [_missing(w, "no docker or podman on this node") for w in self.wanted]
        names = []  # (configured, what to inspect)
        for w in self.wanted:
            if w.startswith(LABEL):
                try:
                    found = self._call([self.engine, "ps", "-a", "-q", "--no-trunc", "--filter", w])
                except (OSError, subprocess.SubprocessError) as exc:
                    return [_missing(x, "%s ps: %s" % (self.engine, exc)) for x in self.wanted]
                ids = [line.strip() for line in found.stdout.splitlines() if line.strip()]
                names += [(w, i) for i in ids] or [(w, "")]
            else:
                names.append((w, w))
        targets = [t for _, t in names if t]
        by_key: dict[str, dict[str, Any]] = {}
        denied = ""
        if targets:
            try:
                done = self._call([self.engine, "inspect", "--type", "container"] + targets
                                  if self.engine == "docker" else [self.engine, "inspect"] + targets)
            except (OSError, subprocess.SubprocessError) as exc:
                return [_missing(w, "%s inspect: %s" % (self.engine, exc)) for w in self.wanted]
            try:
                objs = json.loads(done.stdout or "[]")
            except ValueError:
                objs = []
            for obj in objs if isinstance(objs, list) else []:
                if isinstance(obj, dict):
                    by_key[_own_name(obj)] = obj
                    if isinstance(obj.get("Id"), str):
                        by_key[obj["Id"]] = obj
            if "permission denied" in (done.stderr or "").lower():
                denied = "%s refused us: %s" % (self.engine, done.stderr.strip().splitlines()[0][:160])
                self.problems.note("containers", denied)
        out = []
        for configured, target in names:
            obj = by_key.get(target) or next((o for k, o in by_key.items() if target and k.startswith(target)), None)
            if obj is None:
                why = denied or ("no container matches %s" % configured if not target
                                 else "no container %s on this node" % target)
                out.append(_missing(configured, why))
                continue
            shown = configured if not configured.startswith(LABEL) else (_own_name(obj) or target[:12])
            out.append(container_record(shown, self.engine, obj))
        return out
