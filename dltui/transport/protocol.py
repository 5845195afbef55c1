"""Reads the probe's JSON lines into models and hands them to a sink.

Rebuilds only the records that changed in a line (see ``dltui.node.wire``); unchanged disks,
GPUs and cores are the same objects as in the previous sample. A malformed or truncated line
is counted and reported, never raised; so is a line whose field holds a value of another type
than its model's (``dltui.core.field_types``): a node's ``"temperature_c": "hot"`` must not
reach a rule. Every string a line carries is cleaned here
(``dltui.core.text``): in a sample as its changed fields are decoded, in the other lines whole;
a line whose JSON text cannot hold anything to clean (almost every line) skips it.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from dltui.core.field_types import RecordChecks, record_misfit
from dltui.core.format import clip
from dltui.core.models import (
    CheckpointSample,
    ContainerSample,
    CoreSample,
    CpuSample,
    DiskSample,
    DriveSample,
    FilesystemSample,
    GpuSample,
    IbPortSample,
    MemorySample,
    NetworkSample,
    NodeEvent,
    NodeFacts,
    NvlinkSample,
    PressureSample,
    Sample,
    TaskSample,
    UnitSample,
    is_time,
)
from dltui.core.text import clean_value, json_may_need_cleaning
from dltui.node.schema import PROTOCOL, RECORD_FIELDS
from dltui.node.wire import DecodeError, Decoder

from .base import Sink

_BUILDERS = {
    "core": lambda r: CoreSample(**r),
    "memory": lambda r: MemorySample(**r),
    "pressure": lambda r: PressureSample(**r),
    "tasks": lambda r: TaskSample(**r),
    "disk": lambda r: DiskSample(**r),
    "filesystem": lambda r: FilesystemSample(**r),
    "network": lambda r: NetworkSample(**r),
    "ib_port": lambda r: IbPortSample(**r),
    "gpu": GpuSample.from_dict,
    "nvlink": NvlinkSample.from_dict,
    "unit": lambda r: UnitSample(**r),
    "container": lambda r: ContainerSample(**r),
    "checkpoint": lambda r: CheckpointSample(**r),
    "drive": lambda r: DriveSample(**r),
}
_LIST_KINDS = ("core", "disk", "filesystem", "network", "ib_port", "gpu", "nvlink", "unit", "drive", "container")
MALFORMED_REPORT_EVERY_S = 10.0  # the first at once, then at most one report per 10 s
# What each field may hold: a line whose value is of another type ("temperature_c": "hot") is
# malformed here, not a TypeError in a rule later (which would cost the node its connection).
FIELD_CHECKS = RecordChecks(RECORD_FIELDS)


MAX_LINE_BYTES = 1 << 20  # longer than any hello or keyframe; beyond it a line is garbage
HEAD_KEPT = 200  # of a line over that: what is quoted when it is reported as malformed
READ_CHUNK = 64 * 1024


async def capped_lines(stream: Any, limit: int = MAX_LINE_BYTES) -> AsyncIterator[tuple[bytes, int]]:
    """The whole lines a byte stream says, each with its size in bytes. A line longer than
    ``limit`` is never held whole: it comes as its first HEAD_KEPT bytes (no newline, so it
    reads as malformed) with its full size. A last line with no newline (a connection cut
    it) is not given."""
    size, kept, over = 0, [], False
    while True:
        chunk = await stream.read(READ_CHUNK)
        if not chunk:
            return
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            end = len(chunk) if nl < 0 else nl + 1
            size += end - start
            if not over:
                kept.append(chunk[start:end])
                if size > limit:
                    over = True
                    kept = [b"".join(kept)[:HEAD_KEPT]]
            if nl < 0:
                break
            yield b"".join(kept), size
            size, kept, over = 0, [], False
            start = end


class ProtocolError(Exception):
    """The probe speaks a protocol this dltui does not: a version mismatch, not a bad line."""


class ProbeReader:
    """One per connection: feed it lines, it calls the sink."""

    def __init__(self, name: str, sink: Sink):
        self.name = name
        self.sink = sink
        self.decoder = Decoder(FIELD_CHECKS)
        self.models: dict[str, Any] = {}  # single records (memory, pressure, tasks) by key
        self.lists: dict[str, dict[str, Any]] = {kind: {} for kind in _LIST_KINDS}  # by kind, then key
        self.cpu: CpuSample | None = None
        self.malformed = 0
        self._malformed_reported = 0.0
        self.samples = 0
        self.hello_seen = False

    def feed(self, line: str | bytes) -> None:
        if not line.strip():
            return
        try:
            deliver = self._parse(line)
        except ProtocolError:
            raise
        except (ValueError, KeyError, TypeError, DecodeError, RecursionError) as exc:
            self._malformed(line, exc)  # RecursionError: a line nested thousands deep
            return
        deliver()  # outside the try: an error in the state or the rules is a bug, not a bad line

    def _parse(self, line: str | bytes) -> Callable[[], None]:
        """Decode one line; returns the sink call that delivers it."""
        msg = json.loads(line)
        clean = clean_value if json_may_need_cleaning(line) else None
        kind = msg["type"]
        if kind == "sample":
            sample = self._sample(msg, clean)
            return lambda: self.sink.on_sample(self.name, sample)
        if clean is not None:
            msg = clean(msg)  # hello, event, error: rare lines, cleaned whole
        if kind == "hello":
            facts, interval_s = self._hello(msg)
            return lambda: self.sink.on_hello(self.name, facts, interval_s)
        if kind == "event":
            wrong = record_misfit(NodeEvent, msg)
            if wrong is not None:
                raise DecodeError(f"event {wrong}")
            event = NodeEvent.from_dict(msg)
        elif kind == "error":
            event = NodeEvent(
                time=msg.get("time") or time.time(),
                kind="probe-error",
                message=f"{msg.get('source', 'probe')}: {msg.get('message', '')}",
                severity="warning",
            )
        else:
            raise ValueError(f"unknown line type {kind!r}")
        return lambda: self.sink.on_event(self.name, event)

    def _hello(self, msg: dict[str, Any]) -> tuple[NodeFacts, float | None]:
        if msg.get("protocol") != PROTOCOL:
            raise ProtocolError(
                f"probe speaks protocol {msg.get('protocol')}, this dltui speaks {PROTOCOL}"
            )
        wrong = record_misfit(NodeFacts, msg["facts"])
        if wrong is not None:
            raise DecodeError(f"facts {wrong}")
        self.decoder = Decoder(FIELD_CHECKS)
        self.models.clear()
        for bucket in self.lists.values():
            bucket.clear()
        self.cpu = None
        facts = NodeFacts.from_dict(msg["facts"])
        self.hello_seen = True
        return facts, msg.get("interval_s")

    def _sample(self, msg: dict[str, Any], clean: Callable[[Any], Any] | None) -> Sample:
        t = msg["time"]
        if not is_time(t):
            raise DecodeError(f"sample time {t!r} is not a time")
        records, changed = self.decoder.apply(msg, clean)
        kind_of, models, lists = self.decoder.kind, self.models, self.lists
        cores_changed = False
        for key in changed:
            kind = kind_of(key)
            rec = records.get(key)
            if kind == "cpu":
                continue
            if kind == "core":
                cores_changed = True
            bucket = lists.get(kind, models)  # list records by kind, single records by key
            if rec is None:
                bucket.pop(key, None)
            else:
                bucket[key] = _BUILDERS[kind](rec)
        if "cpu" in changed or cores_changed:
            rec = records.get("cpu")
            if rec is None:
                self.cpu = None
            else:
                self.cpu = CpuSample(**rec, cores=sorted(lists["core"].values(), key=lambda c: c.index))
        self.samples += 1
        return Sample(
            time=t,
            cpu=self.cpu,
            memory=models.get("memory"),
            pressure=models.get("pressure"),
            tasks=models.get("tasks"),
            disks=list(lists["disk"].values()),
            filesystems=list(lists["filesystem"].values()),
            networks=list(lists["network"].values()),
            ib_ports=sorted(lists["ib_port"].values(), key=lambda p: p.name),  # the probe's order
            gpus=sorted(lists["gpu"].values(), key=lambda g: g.index),
            nvlinks=sorted(lists["nvlink"].values(), key=lambda n: n.gpu),
            units=[lists["unit"][k] for k in records if k in lists["unit"]],  # in the probe's (config) order
            checkpoint=models.get("checkpoint"),
            drives=list(lists["drive"].values()),
            containers=[lists["container"][k] for k in records if k in lists["container"]],  # config order
        )

    def _malformed(self, line: str | bytes, exc: Exception) -> None:
        self.malformed += 1
        now = time.monotonic()
        if self.malformed == 1 or now - self._malformed_reported >= MALFORMED_REPORT_EVERY_S:
            self._malformed_reported = now
            text = line if isinstance(line, str) else line.decode("utf-8", "replace")
            text = text.strip()
            shown = clip(text, 80)
            self.sink.on_event(
                self.name,
                NodeEvent(
                    time=time.time(),
                    kind="malformed-line",
                    message=f"probe printed a malformed line ({self.malformed} so far): {shown!r} ({exc})",
                    severity="warning",
                    data={"count": self.malformed},
                ),
            )
