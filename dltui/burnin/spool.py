"""The local copy of a run's raw samples while it is followed: one recording-format file per
node (``dltui.transport.recording``), appended as samples arrive and timed by the samples' own clock, so
memory stays bounded however long the run. At the end ``merge`` streams the nodes' files
into the run's one ``dltui replay`` recording, in time order; nothing is held whole.
Samples are spooled as whole ``sample`` lines, not ``--record``'s delta lines: ``merge``
reorders a node's lines by time, and a delta line moved past another would rebuild wrong.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from dltui.core.models import NodeEvent, NodeFacts, Sample
from dltui.core.status import Status
from dltui.private_files import make_folders
from dltui.state_dir import state_dir
from dltui.transport.recording.format import encode, header
from dltui.transport.recording.recorder import Recorder, RecordError

REORDER = 256  # lines a node's file may be out of time order by (events vs samples)


def default_dir(run_id: str) -> Path:
    return state_dir() / "burnin-spool" / run_id


class _Quiet:
    def on_status(self, name: str, status: Status, reason: str | None = None) -> None: ...
    def on_hello(self, name: str, facts: NodeFacts, interval_s: float | None = None) -> None: ...
    def on_sample(self, name: str, sample: Sample) -> None: ...
    def on_event(self, name: str, event: NodeEvent) -> None: ...


class Spool:
    """A node's samples, events and facts appended to ``path`` (created on first use, so a
    run refused before anything came leaves no file)."""

    def __init__(self, path: Path, node: str):
        self.path = path
        self.node = node
        self._now = 0.0
        self._rec: Recorder | None = None
        self._failed: str | None = None  # why the file could not be made

    def _recorder(self) -> Recorder | None:
        """The file's writer; None once it failed (the run is still followed and judged)."""
        if self._rec is None and self._failed is None:
            try:
                make_folders(self.path.parent)
                self.path.unlink(missing_ok=True)  # an earlier follow of this run: re-read
                self._rec = Recorder.create(_Quiet(), self.path, [self.node],
                                            clock=lambda: self._now, whole_samples=True)
            except RecordError as exc:  # it names the path
                self._failed = str(exc)
            except OSError as exc:
                self._failed = f"{self.path}: {exc.strerror or exc}"
        return self._rec

    @property
    def error(self) -> str | None:
        """Why the local copy is incomplete (the recording then misses samples)."""
        return self._failed or (self._rec.error if self._rec is not None else None)

    def hello(self, facts: NodeFacts, interval_s: float | None) -> None:
        rec = self._recorder()
        if rec is not None:
            rec.on_status(self.node, "ok")
            rec.on_hello(self.node, facts, interval_s)

    def sample(self, sample: Sample) -> None:
        self._now = sample.time
        rec = self._recorder()
        if rec is not None:
            rec.on_sample(self.node, sample)

    def event(self, event: NodeEvent) -> None:
        self._now = event.time
        rec = self._recorder()
        if rec is not None:
            rec.on_event(self.node, event)

    def close(self) -> None:
        if self._rec is not None:
            self._rec.close()

    def remove(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.path.parent.rmdir()  # the run's spool folder, once every node's file is gone


def remove_stale(folder: Path) -> None:
    """Spool files ``NODE.PID.jsonl`` left by a dltui that ended while following (its PID is
    gone): a new follow reads the run from its start on the node again."""
    for path in folder.glob("*.jsonl"):
        pid = path.name.rsplit(".", 2)[-2]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            path.unlink(missing_ok=True)
        except OSError:
            pass  # alive, someone else's: theirs


_KIND = {"status": 0, "hello": 0, "sample": 1, "event": 2}


def _lines(path: Path) -> Iterator[tuple[float, int, bytes]]:
    """A node's file as (time, kind, line), time-ordered within ``REORDER`` lines; its status
    and hello lines timed just before its first sample (replay shows the node from there)."""
    held: list[tuple[float, int, int, bytes]] = []
    early: list[dict[str, Any]] = []
    seq = 0
    with open(path, "rb") as f:
        f.readline()  # the header
        for raw in f:
            line = json.loads(raw)
            kind = line.get("kind")
            if kind in ("status", "hello"):
                early.append(line)
                continue
            if early:
                for e in early:
                    e["t"] = line["t"] - 0.001
                    heapq.heappush(held, (e["t"], 0, seq, encode(e)))
                    seq += 1
                early = []
            heapq.heappush(held, (float(line["t"]), _KIND.get(kind, 2), seq, raw))
            seq += 1
            if len(held) > REORDER:
                t, k, _, data = heapq.heappop(held)
                yield t, k, data
    while held:
        t, k, _, data = heapq.heappop(held)
        yield t, k, data


def merge(out: BinaryIO, sources: Iterable[tuple[str, Iterator[tuple[float, int, bytes]]]]) -> None:
    """Writes a recording into ``out`` from each node's time-ordered lines."""
    sources = list(sources)
    names = [name for name, _ in sources]
    streams = [_first_time(it) for _, it in sources]
    started = min((t for t, _ in streams if t is not None), default=0.0)
    out.write(encode(header(started, names)))
    for _, _, data in heapq.merge(*(it for _, it in streams), key=lambda x: (x[0], x[1])):
        out.write(data if data.endswith(b"\n") else data + b"\n")


def _first_time(it: Iterator[tuple[float, int, bytes]]):
    """(first time or None, the same stream): peeks one line."""
    try:
        first = next(it)
    except StopIteration:
        return None, iter(())
    return first[0], _chain(first, it)


def _chain(first, rest):
    yield first
    yield from rest


def spool_lines(path: Path) -> Iterator[tuple[float, int, bytes]]:
    return _lines(path) if path.exists() else iter(())


def object_lines(
    node: str, facts: NodeFacts | None, samples: list[Sample], events: list[NodeEvent]
) -> Iterator[tuple[float, int, bytes]]:
    """A finished run held in memory (a simulated or reloaded one) as recording lines."""
    calls: list[tuple[float, int, dict[str, Any]]] = []
    if facts is not None:
        first = samples[0].time if samples else 0.0
        calls.append((first - 0.001, 0, {"kind": "status", "status": "ok", "reason": None}))
        calls.append((first - 0.001, 0, {"kind": "hello", "facts": facts.to_dict(),
                                          "interval_s": 1.0}))
    calls += [(s.time, 1, {"kind": "sample", "sample": s.to_dict()}) for s in samples]
    calls += [(e.time, 2, {"kind": "event", "event": e.to_dict()}) for e in events]
    calls.sort(key=lambda c: (c[0], c[1]))
    for t, kind, payload in calls:
        yield t, kind, encode({"t": t, "node": node, **payload})
