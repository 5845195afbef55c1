"""``--record FILE``: a sink that passes every call on and also appends it to a JSONL file
(the format: ``format``).

Recording is a bystander: lines are buffered and written at most once a second (and at close),
so the dashboard never waits on the disk per sample; when a write fails (disk full, a removed
USB stick) every node gets one event saying so, recording stops, and the dashboard goes on.
"""

from __future__ import annotations

import gzip
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from dltui.core.models import NodeEvent, NodeFacts, Sample
from dltui.core.status import Status
from dltui.private_files import UnsafePath, create_new

from ..base import Sink
from .format import SampleDeltas, encode, header

FLUSH_EVERY_S = 1.0
GZIP_LEVEL = 6  # gzip(1)'s default: ~7x smaller, half the CPU of the module's default 9


class RecordError(Exception):
    """The recording file cannot be created; said before the dashboard starts."""


def _new_file(path: Path) -> BinaryIO:
    """A new private file (``dltui.private_files.create_new``), gzip-compressed when its name
    ends in .gz."""
    raw = open(path, "xb", opener=lambda p, _flags: create_new(Path(p)))
    if path.suffix != ".gz":
        return raw
    return _GzipFile(raw)  # type: ignore[return-value]  # a binary file, as BinaryIO means


class _GzipFile(gzip.GzipFile):
    """A gzip stream over ``raw`` that closes ``raw`` too (GzipFile leaves a file it was
    given open)."""

    def __init__(self, raw: BinaryIO):
        super().__init__(fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL)
        self._under = raw

    def close(self) -> None:
        try:
            super().close()  # writes the trailer
        finally:
            self._under.close()


class Recorder:
    """A tee: every ``Sink`` call goes to ``sink`` first, then into the recording."""

    def __init__(self, sink: Sink, file: BinaryIO, names: list[str], clock: Callable[[], float] = time.time,
                 whole_samples: bool = False):
        self.sink = sink
        self.clock = clock
        self.error: str | None = None  # why recording stopped, once it has
        self._file: BinaryIO | None = file
        self._label = str(getattr(file, "name", "recording"))
        self._nodes = dict.fromkeys(names)  # ordered set: who hears that recording stopped
        self._pending: list[bytes] = []
        # whole_samples: "sample" lines, each readable alone, for a file whose lines are later
        # reordered by time (the burn-in spool's merge); a reordered delta line rebuilds wrong
        self._deltas = None if whole_samples else SampleDeltas()
        self._last_flush = time.monotonic()
        self._append(header(clock(), names))

    @classmethod
    def create(cls, sink: Sink, path: str | Path, names: list[str],
               clock: Callable[[], float] = time.time, whole_samples: bool = False) -> Recorder:
        """Record into a new file at ``path``, 0600 whatever the umask; never overwrites one (it
        may be last night's), never writes through a link or into another user's file."""
        try:
            file = _new_file(Path(path))
        except UnsafePath as exc:
            raise RecordError(str(exc)) from None
        except FileExistsError:
            raise RecordError(f"{path}: already exists; dltui does not overwrite a recording") from None
        except OSError as exc:
            raise RecordError(f"{path}: cannot create the recording: {exc.strerror or exc}") from None
        return cls(sink, file, names, clock, whole_samples)

    # -- Sink -------------------------------------------------------------------------------

    def on_status(self, name: str, status: Status, reason: str | None = None) -> None:
        self.sink.on_status(name, status, reason)
        self._record(name, "status", {"status": status, "reason": reason})

    def on_hello(self, name: str, facts: NodeFacts, interval_s: float | None = None) -> None:
        self.sink.on_hello(name, facts, interval_s)
        self._record(name, "hello", {"facts": facts.to_dict(), "interval_s": interval_s})

    def on_sample(self, name: str, sample: Sample) -> None:
        self.sink.on_sample(name, sample)
        if self._file is None:
            return
        if self._deltas is None:
            self._record(name, "sample", {"sample": sample.to_dict()})
        else:
            self._record(name, "delta", {"sample": self._deltas.encode(name, sample)})

    def on_event(self, name: str, event: NodeEvent) -> None:
        self.sink.on_event(name, event)
        self._record(name, "event", {"event": event.to_dict()})

    # -- file -------------------------------------------------------------------------------

    def flush(self) -> None:
        """Write what is buffered now."""
        self._last_flush = time.monotonic()
        if self._file is None or not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        try:
            self._file.write(data)
            self._file.flush()
        except (OSError, ValueError) as exc:  # ValueError: the file was closed under us
            self._stop(exc)

    def close(self) -> None:
        self.flush()
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()  # gzip writes its trailer here
            except (OSError, ValueError) as exc:
                self._stop(exc)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _record(self, name: str, kind: str, payload: dict[str, Any]) -> None:
        if self._file is None:
            return
        self._nodes.setdefault(name)
        self._append({"t": self.clock(), "node": name, "kind": kind, **payload})

    def _append(self, line: dict[str, Any]) -> None:
        try:
            self._pending.append(encode(line))
        except (TypeError, ValueError) as exc:  # a value JSON cannot hold: a bug, but not the dashboard's end
            self._stop(exc)
            return
        if time.monotonic() - self._last_flush >= FLUSH_EVERY_S:
            self.flush()

    def _stop(self, exc: Exception) -> None:
        """Give up on the file and tell every node once; the dashboard keeps running."""
        file, self._file = self._file, None
        self._pending.clear()
        self.error = f"{self._label}: {getattr(exc, 'strerror', None) or exc}"
        if file is not None:
            try:
                file.close()
            except (OSError, ValueError):
                pass  # already failing; the first error is the one worth telling
        event = NodeEvent(self.clock(), "recording", f"recording stopped: {self.error}", severity="warning")
        for name in self._nodes:
            self.sink.on_event(name, event)
