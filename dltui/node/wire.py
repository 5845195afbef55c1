"""Encoding of sample lines: per record, only the fields that changed, by position.

A collected sample is a nested dict (see ``collect.py``); on the wire it becomes flat records
keyed ``kind`` or ``kind/id`` (``gpu/0``, ``disk/nvme0n1``), each sent as ``{"<field
position>": value}`` with only the fields that differ from the previous line. Every
``KEYFRAME_EVERY`` lines (and the first) a keyframe carries every field of every record, so a
decoder that lost a line is whole again within that many lines. Records that disappeared are
listed under ``"gone"``.

Why: an 8-GPU sample spelled out in full is ~6 KB of JSON; most of it (names, totals, max
clocks, counters at 0) does not change from second to second.
"""

from __future__ import annotations

from typing import AbstractSet, Any, Callable, Mapping, Protocol

from .schema import RECORD_FIELDS


class FieldChecks(Protocol):
    """What a field may hold, given to the Decoder by the operator's side (which knows the
    types: ``dltui.core.field_types``); the probe decodes nothing and needs none."""

    @property
    def fast(self) -> Mapping[str, Mapping[str, AbstractSet[type]]]:
        """Per record kind, per wire position: the types a value passes with at once (None's too)."""

    def misfit(self, kind: str, pos: str, value: Any) -> str | None:
        """None when ``value`` fits after all (a list whose items fit), else what is wrong
        with it in words: ``is 'hot', not a number``, ``[0].pid is '42', not an int``."""

KEYFRAME_EVERY = 30

# Lists of records inside a collected sample, and the field that names each record.
LIST_RECORDS = (
    ("cores", "core", "index"),
    ("disks", "disk", "name"),
    ("filesystems", "filesystem", "mountpoint"),
    ("networks", "network", "name"),
    ("ib_ports", "ib_port", "name"),
    ("gpus", "gpu", "index"),
    ("nvlinks", "nvlink", "gpu"),
    ("units", "unit", "name"),
    ("containers", "container", "name"),
    ("drives", "drive", "device"),
)
SINGLE_RECORDS = ("cpu", "memory", "pressure", "tasks", "checkpoint")


def flatten(sample: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Collected sample -> {record key: {field: value}} in a stable order."""
    records = {}
    for kind in SINGLE_RECORDS:
        rec = sample.get(kind)
        if rec is not None:
            records[kind] = rec
    cpu = sample.get("cpu") or {}
    for list_name, kind, id_field in LIST_RECORDS:
        items = cpu.get("cores", ()) if list_name == "cores" else sample.get(list_name, ())
        for rec in items:
            records["%s/%s" % (kind, rec[id_field])] = rec
    return records


class Encoder:
    """Turns collected samples into compact wire dicts. One per stream (it remembers)."""

    def __init__(self, keyframe_every: int = KEYFRAME_EVERY) -> None:
        self.keyframe_every = keyframe_every
        self.previous: dict[str, dict[str, Any]] = {}
        self.lines = 0

    def encode(self, sample: dict[str, Any]) -> dict[str, Any]:
        records = flatten(sample)
        keyframe = self.lines % self.keyframe_every == 0
        self.lines += 1
        out = {}
        for key, rec in records.items():
            old = None if keyframe else self.previous.get(key)
            if old is not None and old == rec:
                continue  # unchanged, found by one comparison in C: most records, most seconds
            fields = RECORD_FIELDS[key.split("/", 1)[0]]
            delta = {}
            for pos, name in enumerate(fields):
                value = rec.get(name)
                if old is None:
                    if value is not None:  # a new record starts all-null on the decoder
                        delta[str(pos)] = value
                elif old.get(name) != value:
                    delta[str(pos)] = value
            if delta or old is None:
                out[key] = delta
        line = {"type": "sample", "time": sample["time"], "r": out}
        if keyframe:
            line["key"] = 1
        else:
            gone = [key for key in self.previous if key not in records]
            if gone:
                line["gone"] = gone
        self.previous = records
        return line


class DecodeError(ValueError):
    """A sample line that does not fit the field tables."""


class Decoder:
    """Rebuilds records from wire dicts; the counterpart of Encoder. One per stream.

    ``apply`` returns the full current records and the set of keys that changed, so the
    caller can rebuild only what changed. Runs once per node per sample: each record key's
    kind and field table are looked up once and remembered.
    """

    def __init__(self, checks: FieldChecks | None = None) -> None:
        self.records: dict[str, dict[str, Any]] = {}
        self._kinds: dict[str, str] = {}  # record key -> kind
        self._checks = checks  # every field a line changes is checked against it
        self._half_applied: set[str] = set()  # keys a refused line changed before its bad field

    def kind(self, key: str) -> str:
        """``gpu`` for ``gpu/3``; raises DecodeError for a kind the tables do not know."""
        kind = self._kinds.get(key)
        if kind is None:
            kind = key.split("/", 1)[0]
            if kind not in _FIELD_BY_POSITION:
                raise DecodeError("unknown record %r" % key)
            self._kinds[key] = kind
        return kind

    def apply(
        self, line: dict[str, Any], clean: Callable[[Any], Any] | None = None
    ) -> tuple[dict[str, dict[str, Any]], set[str]]:
        """``clean``, when given, is applied to every string, list and dict value of the line
        as it is decoded (the operator side passes its text sanitiser for a line that may need
        it: only the fields that changed are in a line)."""
        changes = line.get("r")
        if not isinstance(changes, dict):
            raise DecodeError("sample line without records")
        keyframe = bool(line.get("key"))
        records = {} if keyframe else self.records
        changed: set[str] = self._half_applied
        self._half_applied = set()
        fast = None if self._checks is None else self._checks.fast
        key = ""
        try:
            for key, delta in changes.items():
                kind = self.kind(key)
                if not isinstance(delta, dict):
                    raise DecodeError("record %r is not a dict" % key)
                by_position = _FIELD_BY_POSITION[kind]
                allowed = None if fast is None else fast[kind]
                rec = None if keyframe else records.get(key)
                if rec is None:  # updated in place otherwise: callers copy what they keep
                    rec = records[key] = dict.fromkeys(RECORD_FIELDS[kind])
                for pos, value in delta.items():
                    name = by_position.get(pos)
                    if name is None:
                        raise DecodeError("field %r out of range for %s" % (pos, kind))
                    if allowed is not None and type(value) not in allowed[pos]:
                        wrong = self._checks.misfit(kind, pos, value)  # type: ignore[union-attr]
                        if wrong is not None:
                            gap = "" if wrong[0] in ".[" else " "
                            raise DecodeError("%s %s%s%s" % (key, name, gap, wrong))
                    if clean is not None and type(value) in _TEXT_TYPES:
                        value = clean(value)
                    rec[name] = value
                changed.add(key)
        except DecodeError:
            if not keyframe:  # records updated in place up to the bad field: said with the next line
                self._half_applied = changed | ({key} & records.keys())
            raise
        if keyframe:
            changed |= set(self.records) - set(records)
        for key in line.get("gone", ()):
            if records.pop(key, None) is not None:
                changed.add(key)
        self.records = records
        return records, changed


_TEXT_TYPES = frozenset((str, list, dict))  # what ``clean`` is applied to


# Field names by their position as the wire spells it ("0", "1", ...).
_FIELD_BY_POSITION = {
    kind: {str(pos): name for pos, name in enumerate(fields)} for kind, fields in RECORD_FIELDS.items()
}
