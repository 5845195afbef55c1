"""The recording format, shared by the recorder (``--record``), the replay and the burn-in's spool.

A recording is JSON lines. It starts with a header line, ``{"dltui_recording": 1, "started": t, "nodes": [...],
"dltui": version}``, then holds one line per sink call, in the order the calls came:

    {"t": 1767258001.2, "node": "gpu01", "kind": "status", "status": "ok", "reason": null}
    {"t": ..., "node": ..., "kind": "hello", "facts": {...}, "interval_s": 1.0}
    {"t": ..., "node": ..., "kind": "sample", "sample": {...}}     # Sample.to_dict()
    {"t": ..., "node": ..., "kind": "delta", "sample": {...}}      # the wire's delta form (format 2)
    {"t": ..., "node": ..., "kind": "event", "event": {...}}       # NodeEvent.to_dict()

A ``delta`` line holds a sample as the probe sends it (``dltui.node.wire``): per record only
the fields that changed since the node's previous sample line, every field of every record
each ``KEYFRAME_EVERY`` lines. A sample spelled out whole was 3.9 KB a line where the probe sent
545 B; the recorder writes deltas (``SampleDeltas``), the replay rebuilds them
(``SampleRebuilder``); format 1's whole samples still play.

``t`` is the operator's wall clock when the call came, which is what ``dltui replay``
(``replay``) times its playback by. A name ending in ``.gz`` writes gzip.

A recording may come from someone else: every string in a line is cleaned as it is read
(``dltui.core.text``), as the probe's lines are.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any, BinaryIO

from dltui import __version__
from dltui.core.field_types import record_misfit
from dltui.core.models import NodeEvent, NodeFacts, Sample, is_time
from dltui.core.status import status_of
from dltui.core.text import clean_value, json_may_need_cleaning
from dltui.node.wire import LIST_RECORDS, SINGLE_RECORDS, Decoder, Encoder

from ..protocol import FIELD_CHECKS

FORMAT = 2  # the header's "dltui_recording"; bump when a line changes meaning
READS = (1, 2)  # format 1: no delta lines
GZIP_MAGIC = b"\x1f\x8b"


def header(started: float, nodes: list[str]) -> dict[str, Any]:
    """The first line of a recording."""
    return {"dltui_recording": FORMAT, "started": started, "nodes": list(nodes), "dltui": __version__}


def encode(line: dict[str, Any]) -> bytes:
    """One line of the file; raises TypeError/ValueError for a value JSON cannot hold."""
    return json.dumps(line, separators=(",", ":")).encode() + b"\n"


def parse_line(line: bytes, deltas: SampleRebuilder | None = None) -> tuple[float, str, tuple]:
    """A recorded line -> (its time, the Sink method, its arguments); raises if unreadable
    (ValueError, KeyError, TypeError, AttributeError, RecursionError). ``deltas``: where the
    recording's delta lines are rebuilt into samples (a delta line without it is unreadable)."""
    record = json.loads(line)
    if json_may_need_cleaning(line):
        record = clean_value(record)
    t, name, kind = float(record["t"]), record["node"], record["kind"]
    if not math.isfinite(t) or not isinstance(name, str):
        raise ValueError("no time or node")
    wrong = _misfit(kind, record)
    if wrong is not None:
        raise ValueError(wrong)
    if kind in ("sample", "delta"):
        if kind == "delta":
            if deltas is None or not isinstance(record["sample"], dict):
                raise ValueError("a delta line where none is read")
            sample = deltas.sample(name, record["sample"])
        else:
            sample = Sample.from_dict(record["sample"])
        if not is_time(sample.time):
            raise ValueError(f"sample time {sample.time!r} is not a time")
        return t, "on_sample", (name, sample)
    if kind == "status":
        status = status_of(record["status"])
        if status is None:
            raise ValueError(f"unknown status {record['status']!r}")
        return t, "on_status", (name, status, record.get("reason"))
    if kind == "hello":
        return t, "on_hello", (name, NodeFacts.from_dict(record["facts"]), record.get("interval_s"))
    if kind == "event":
        return t, "on_event", (name, NodeEvent.from_dict(record["event"]))
    raise ValueError(f"unknown kind {kind!r}")


# Each kind of line, the part of it that holds a model's fields, and that model.
_PARTS: dict[str, tuple[str, type]] = {
    "sample": ("sample", Sample),
    "hello": ("facts", NodeFacts),
    "event": ("event", NodeEvent),
}


def _misfit(kind: str, record: dict[str, Any]) -> str | None:
    """What in a sample, hello or event line is not of its model's type (``core.field_types``):
    a recording from elsewhere is read as carefully as a node's lines."""
    if kind not in _PARTS:
        return None
    part, cls = _PARTS[kind]
    wrong = record_misfit(cls, record[part])
    return None if wrong is None else f"{part} {wrong}"


class SampleDeltas:
    """The recorder's side: each node's samples in the wire's delta form, one encoder a node."""

    def __init__(self) -> None:
        self._encoders: dict[str, Encoder] = {}

    def encode(self, name: str, sample: Sample) -> dict[str, Any]:
        encoder = self._encoders.get(name)
        if encoder is None:
            encoder = self._encoders[name] = Encoder()
        return encoder.encode(sample.to_dict())


_LIST_OF = {kind: name for name, kind, _ in LIST_RECORDS}


class SampleRebuilder:
    """The replay's side: each node's delta lines back into whole samples, checked field by
    field as a probe's lines are (a recording may come from someone else). A node's first
    lines before a keyframe, or after an unreadable one, fail until its next keyframe."""

    def __init__(self) -> None:
        self._decoders: dict[str, Decoder] = {}

    def sample(self, name: str, wire: dict[str, Any]) -> Sample:
        decoder = self._decoders.get(name)
        if decoder is None:
            decoder = self._decoders[name] = Decoder(FIELD_CHECKS)
        if not wire.get("key") and not decoder.records:
            raise ValueError("a delta before the node's first keyframe")
        records, _ = decoder.apply(wire)
        return Sample.from_dict(_nested(wire["time"], records))


def _nested(t: float, records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The flat records (``wire.flatten``) back into a sample's dict, records in their order."""
    out: dict[str, Any] = {"time": t}
    cores: list[dict[str, Any]] = []
    for key, rec in records.items():
        kind = key.split("/", 1)[0]
        if kind == "core":
            cores.append(dict(rec))
        elif kind in SINGLE_RECORDS:
            out[kind] = dict(rec)
        else:
            out.setdefault(_LIST_OF[kind], []).append(dict(rec))
    if "cpu" in out:
        out["cpu"]["cores"] = cores
    return out


def open_file(path: Path) -> BinaryIO:
    """Plain or gzip, told by the first bytes rather than the name."""
    file = open(path, "rb")
    if file.read(2) == GZIP_MAGIC:
        file.close()
        return gzip.open(path, "rb")  # type: ignore[return-value]  # GzipFile: a binary file
    file.seek(0)
    return file
