"""What each field a node sends may hold, read from the models' annotations.

A node (or a recording) may send anything: ``"temperature_c": "hot"`` decodes as JSON and
would reach a rule's comparison a moment later, where it is a ``TypeError`` that costs the node
its connection as a bug (or stops a replay). What comes in is checked against this table
instead, where it enters: the decoder checks every field a probe line changes (one set lookup
for most), a hello's facts and a recording's lines are checked whole. The table is built once
from the dataclasses in ``models`` (whose fields match the probe's field tables one for one:
``tests/unit/test_models.py``), so a type is written in one place.

Numbers: a float field takes an int too (JSON writes 61.0 as 61 when the probe's value was an
int); an int field takes only an int (a mask or a count is used as one); ``bool`` is not a
number here, though Python makes it one. ``None`` is always allowed: "not reported". A name the
model does not have is left to the model's constructor (facts ignore it, records refuse it).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from . import models

# The record kinds of the wire schema (``dltui.node.schema.RECORD_FIELDS``) and their models.
RECORD_MODELS: dict[str, type] = {
    "cpu": models.CpuSample,
    "core": models.CoreSample,
    "memory": models.MemorySample,
    "pressure": models.PressureSample,
    "tasks": models.TaskSample,
    "disk": models.DiskSample,
    "filesystem": models.FilesystemSample,
    "network": models.NetworkSample,
    "ib_port": models.IbPortSample,
    "gpu": models.GpuSample,
    "nvlink": models.NvlinkSample,
    "unit": models.UnitSample,
    "container": models.ContainerSample,
    "checkpoint": models.CheckpointSample,
    "drive": models.DriveSample,
}


class FieldType(NamedTuple):
    """The types a field's value may have (``None`` aside; ``allowed`` None: any), and for a
    list or a record, what is wrong inside it (None when nothing); ``what`` names it."""

    allowed: frozenset[type] | None
    inner: Callable[[Any], str | None] | None
    what: str


def misfit(spec: FieldType, value: Any) -> str | None:
    """None when ``value`` fits ``spec``; else what is wrong, in words."""
    if value is None or spec.allowed is None:
        return None
    if type(value) not in spec.allowed:
        return f"is {_shown(value)}, not {spec.what}"
    return None if spec.inner is None else spec.inner(value)


def fits(spec: FieldType, value: Any) -> bool:
    return misfit(spec, value) is None


def record_misfit(cls: type, data: Any) -> str | None:
    """None when the dict ``data`` fits the dataclass ``cls`` field by field (nested records
    and lists too); else the first field that does not, and why: ``gpus[0].name is 5, not a str``."""
    if type(data) is not dict:
        return f"is {_shown(data)}, not a record"
    specs = field_types(cls)
    for name, value in data.items():
        spec = specs.get(name)
        wrong = None if spec is None else misfit(spec, value)
        if wrong is not None:
            return f"{name}{'' if wrong[0] in '.[' else ' '}{wrong}"
    return None


@functools.cache
def field_types(cls: type) -> dict[str, FieldType]:
    """Each field of the dataclass ``cls`` by name."""
    hints = typing.get_type_hints(cls)
    return {f.name: _field_type(hints[f.name]) for f in dataclasses.fields(cls)}


class RecordChecks:
    """The table ``dltui.node.wire.Decoder`` checks a line's fields against, per record kind
    and wire position (``"0"``, ``"1"``…). ``fast`` answers most values with one set lookup:
    the types a scalar field may have, ``None``'s among them; a list, a wrong type or a
    ``bool`` in a number falls through to ``misfit``, which looks closer."""

    def __init__(self, record_fields: Mapping[str, tuple[str, ...]]):
        self.specs: dict[str, dict[str, FieldType]] = {}
        self.fast: dict[str, dict[str, frozenset[type]]] = {}
        for kind, names in record_fields.items():
            by_name = field_types(RECORD_MODELS[kind])
            self.specs[kind] = {str(pos): by_name[name] for pos, name in enumerate(names)}
            self.fast[kind] = {
                pos: spec.allowed | {type(None)}
                if spec.inner is None and spec.allowed is not None
                else frozenset()
                for pos, spec in self.specs[kind].items()
            }

    def misfit(self, kind: str, pos: str, value: Any) -> str | None:
        return misfit(self.specs[kind][pos], value)


_NUMBER = frozenset((int, float))
_ANY = FieldType(None, None, "anything")


def _field_type(hint: Any) -> FieldType:
    if hint is Any:
        return _ANY
    options = [a for a in _union(hint) if a is not type(None)]
    if len(options) != 1:
        raise TypeError(f"no wire type for {hint!r}")
    (hint,) = options
    origin = typing.get_origin(hint)
    if hint is float:
        return FieldType(_NUMBER, None, "a number")
    if hint in (int, bool, str):
        return FieldType(frozenset((hint,)), None, ("an " if hint is int else "a ") + hint.__name__)
    if origin is typing.Literal:  # a word the model reads with its own check (a severity)
        return FieldType(frozenset((str,)), None, "a str")
    if origin is dict:
        return FieldType(frozenset((dict,)), None, "a dict")
    if origin is list:
        (item,) = typing.get_args(hint)
        return FieldType(frozenset((list,)), _items(item), f"a list of {_name(item)}")
    if dataclasses.is_dataclass(hint):
        record = typing.cast(type, hint)
        return FieldType(frozenset((dict,)), lambda d: _inside(record_misfit(record, d)), "a record")
    raise TypeError(f"no wire type for {hint!r}")


def _items(hint: Any) -> Callable[[list[Any]], str | None]:
    """What is wrong with the first item of a list that does not fit ``hint``."""
    spec = _field_type(hint)
    if spec.inner is None and spec.allowed is not None:  # scalars: the common case, fast
        allowed = spec.allowed | {type(None)}

        def scalars(items: list[Any]) -> str | None:
            for i, v in enumerate(items):
                if type(v) not in allowed:
                    return f"[{i}] is {_shown(v)}, not {spec.what}"
            return None

        return scalars

    def any_items(items: list[Any]) -> str | None:
        for i, v in enumerate(items):
            wrong = misfit(spec, v)
            if wrong is not None:
                return f"[{i}]{'' if wrong[0] in '.[' else ' '}{wrong}"
        return None

    return any_items


def _inside(wrong: str | None) -> str | None:
    """A nested record's misfit as a path from its field: ``.name is 5, not a str``."""
    return None if wrong is None else ("." + wrong if not wrong.startswith("is ") else wrong)


def _union(hint: Any) -> tuple[Any, ...]:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return typing.get_args(hint)
    return (hint,)


def _name(hint: Any) -> str:
    names = [getattr(a, "__name__", str(a)) for a in _union(hint) if a is not type(None)]
    return " or ".join(names) + (" (or null)" if type(None) in _union(hint) else "")


def _shown(value: Any) -> str:
    """A wrong value, short (the line itself is quoted beside the reason)."""
    text = repr(value)
    return text if len(text) <= 24 else text[:20] + "..."
