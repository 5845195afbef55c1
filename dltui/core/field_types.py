"""What each field of a node's records may hold, read from the models' annotations.

A node may send anything: ``"temperature_c": "hot"`` decodes as JSON and would reach a rule's
comparison a moment later, where it is a ``TypeError`` that costs the node its connection as a
bug. The decoder checks every field a line changes against this table instead (one set lookup
per field, the items of a list too), so such a line is counted as malformed and the node goes
on. The table is built once from the dataclasses in ``models`` (whose fields match the probe's
field tables one for one: ``tests/unit/test_models.py``), so a type is written in one place.

Numbers: a float field takes an int too (JSON writes 61.0 as 61 when the probe's value was an
int); an int field takes only an int (a mask or a count is used as one); ``bool`` is not a
number here, though Python makes it one. ``None`` is always allowed: "not reported".
"""

from __future__ import annotations

import dataclasses
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
    "checkpoint": models.CheckpointSample,
    "drive": models.DriveSample,
}
NOT_RECORD_FIELDS = {"cpu": ("cores",)}  # sent as records of their own


class FieldType(NamedTuple):
    """The types a field's value may have (``None`` aside), and for a list, whether each of
    its items fits; ``what`` names it for the malformed-line message."""

    allowed: frozenset[type]
    items: Callable[[Any], bool] | None
    what: str


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
                pos: spec.allowed | {type(None)} if spec.items is None else frozenset()
                for pos, spec in self.specs[kind].items()
            }

    def misfit(self, kind: str, pos: str, value: Any) -> str | None:
        spec = self.specs[kind][pos]
        return None if fits(spec, value) else spec.what


def fits(spec: FieldType, value: Any) -> bool:
    return value is None or (
        type(value) in spec.allowed and (spec.items is None or spec.items(value))
    )


_NUMBER = frozenset((int, float))


def _field_type(hint: Any) -> FieldType:
    options = [a for a in _union(hint) if a is not type(None)]
    if len(options) != 1:
        raise TypeError(f"no wire type for {hint!r}")
    hint = options[0]
    if hint is float:
        return FieldType(_NUMBER, None, "a number")
    if hint in (int, bool, str):
        return FieldType(frozenset((hint,)), None, ("an " if hint is int else "a ") + hint.__name__)
    if typing.get_origin(hint) is list:
        (item,) = typing.get_args(hint)
        return FieldType(frozenset((list,)), _items(item), f"a list of {_name(item)}")
    if dataclasses.is_dataclass(hint):
        return FieldType(frozenset((dict,)), None, "a record")
    raise TypeError(f"no wire type for {hint!r}")


def _items(hint: Any) -> Callable[[Any], bool]:
    """Whether every item of a list fits ``hint`` (a dataclass: a dict of its fields)."""
    if dataclasses.is_dataclass(hint):
        fields = field_types(hint)  # type: ignore[arg-type]  # a class here, not an instance

        def record(items: list[Any]) -> bool:
            return all(
                type(item) is dict
                and all(name in fields and fits(fields[name], v) for name, v in item.items())
                for item in items
            )

        return record
    spec = _field_type(hint)
    allowed = spec.allowed | ({type(None)} if type(None) in _union(hint) else set())
    if spec.items is None:
        return lambda items: all(type(v) in allowed for v in items)
    return lambda items: all(v is None or fits(spec, v) for v in items)


def _union(hint: Any) -> tuple[Any, ...]:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return typing.get_args(hint)
    return (hint,)


def _name(hint: Any) -> str:
    names = [getattr(a, "__name__", str(a)) for a in _union(hint) if a is not type(None)]
    return " or ".join(names) + (" (or null)" if type(None) in _union(hint) else "")
