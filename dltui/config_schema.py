"""How a declared key checks its value: typed TOML tables as frozen dataclasses.

A table of the config file (or of a theme file) is a frozen dataclass whose fields are its
keys, each made with ``key(default, doc, ...)``: the annotation is the type wanted, the
metadata the range and the words for docs/configuration.md. ``build(Table, data, where)`` turns a
parsed TOML table into that dataclass or raises ``ConfigError`` with one line naming the key:

- an unknown key, with its nearest known spelling (``intervall`` -> ``interval?``);
- a wrong type, with the type wanted (no guessing: ``"false"`` is not a boolean);
- a number that is not finite or out of its range.

Types understood: ``bool``, ``int``, ``float``, ``str``, ``Literal[...]``, ``X | None`` (not
set), ``tuple[str, ...]`` (a TOML list of strings), ``dict[str, str]``, ``dict[str, Any]`` (a
table checked elsewhere, e.g. rule parameters), a nested table (another such dataclass) and
``dict[str, Table]`` (named tables, ``[groups.NAME]``).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import math
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, TypeVar

T = TypeVar("T")


class ConfigError(Exception):
    """A config file that cannot be used; the message names the file and the problem."""


def key(
    default: Any = dataclasses.MISSING,
    doc: str = "",
    *,
    min: float | None = None,  # noqa: A002 - the words the docs table uses
    max: float | None = None,  # noqa: A002
    choices: tuple[str, ...] = (),
    name: str | None = None,
    unit: str = "",
) -> Any:
    """One key of a table. ``default`` MISSING: required. ``name``: the key in the file when
    it differs from the field (``interval`` for ``interval_s``). ``choices``: the words a
    string (or each string of a list) may be; ``Literal`` types give them by themselves."""
    meta = {"doc": doc, "min": min, "max": max, "choices": choices, "name": name, "unit": unit}
    if isinstance(default, dict):
        frozen = dict(default)
        return dataclasses.field(default_factory=lambda: dict(frozen), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def table(cls: type, doc: str = "") -> Any:
    """A nested table (``[ssh]``), all of its keys at their defaults when absent."""
    return dataclasses.field(default_factory=cls, metadata={"doc": doc, "name": None, "unit": ""})


class Key(NamedTuple):
    name: str  # as written in the file
    attr: str  # the dataclass field
    kind: Any  # the annotation, resolved, without "| None"
    optional: bool  # "| None": may be left unset
    default: Any  # dataclasses.MISSING when required
    doc: str
    min: float | None
    max: float | None
    choices: tuple[str, ...]
    unit: str


_KEYS: dict[type, tuple[Key, ...]] = {}


def keys(cls: type) -> tuple[Key, ...]:
    known = _KEYS.get(cls)
    if known is None:
        known = _KEYS[cls] = _declared(cls)
    return known


def _declared(cls: type) -> tuple[Key, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init or f.metadata.get("internal"):
            continue
        kind, optional = _unwrap_optional(hints[f.name])
        meta = f.metadata
        choices = tuple(meta.get("choices") or ())
        if typing.get_origin(kind) is typing.Literal:
            choices = tuple(str(c) for c in typing.get_args(kind))
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        out.append(
            Key(
                meta.get("name") or f.name, f.name, kind, optional, default, meta.get("doc", ""),
                meta.get("min"), meta.get("max"), choices, meta.get("unit", ""),
            )
        )
    return tuple(out)


def names(cls: type) -> tuple[str, ...]:
    """The keys a table accepts, as written in the file."""
    return tuple(k.name for k in keys(cls))


def nearest(word: str, known: Iterable[str]) -> str:
    """``(did you mean 'interval'?)`` for a near miss, else the list of known words."""
    known = sorted(known)
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    if close:
        return f"(did you mean {close[0]!r}?)"
    return f"(known: {', '.join(known)})" if known else "(none are known here)"


def build(cls: type[T], data: Any, where: str) -> T:
    """The dataclass ``cls`` from a parsed TOML table; ``where`` prefixes every message
    (``"config.toml: [ssh]"``, or ``"config.toml:"`` for the top level)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a table, not {_shown(data)}")
    by_name = {k.name: k for k in keys(cls)}
    for name in data:
        if name not in by_name:
            raise ConfigError(f"{where} unknown key {name!r} {nearest(name, by_name)}")
    values = {}
    for k in by_name.values():
        if k.name in data:
            values[k.attr] = _checked(k, data[k.name], where)
        elif k.default is dataclasses.MISSING:
            raise ConfigError(f"{where} {k.name} is missing: {_wanted(k)}")
    return cls(**values)


def _checked(k: Key, value: Any, where: str) -> Any:
    kind = k.kind
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return build(kind, value, _inside(where, k.name))
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is dict and dataclasses.is_dataclass(args[1]):
        if not isinstance(value, dict):
            raise _wrong(k, value, where)
        named: Any = args[1]
        return {name: build(named, sub, _inside(where, f"{k.name}.{name}")) for name, sub in value.items()}
    if not _is_kind(kind, value):
        raise _wrong(k, value, where)
    _in_range(k, value, where)
    if kind is float:
        value = float(value)
    return tuple(value) if isinstance(value, list) else value


def _inside(where: str, name: str) -> str:
    """``"file: [ssh]"`` from ``("file:", "ssh")``; ``"file: [a.b]"`` from ``("file: [a]", "b")``."""
    if where.endswith("]"):
        return f"{where[:-1]}.{name}]"
    return f"{where} [{name}]"


def _is_kind(kind: Any, value: Any) -> bool:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is str or origin is typing.Literal:
        return isinstance(value, str)
    if origin is tuple:
        return isinstance(value, list) and all(_is_kind(args[0], v) for v in value)
    if origin is dict:
        return isinstance(value, dict) and (
            args[1] is Any or all(_is_kind(args[1], v) for v in value.values())
        )
    raise TypeError(f"config_schema: no check for {kind!r}")  # a declaration this file misses


def _in_range(k: Key, value: Any, where: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise _wrong(k, value, where)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        low = k.min if k.min is not None else -math.inf
        high = k.max if k.max is not None else math.inf
        if not low <= value <= high:
            raise _wrong(k, value, where)
    if isinstance(value, list) and k.min is not None and len(value) < k.min:
        raise _wrong(k, value, where)
    words = value if isinstance(value, list) else (value,)
    if k.choices:
        bad = [w for w in words if w not in k.choices]
        if bad:
            raise ConfigError(
                f"{where} {k.name}: {bad[0]!r} is not one of {', '.join(k.choices)} "
                f"{nearest(bad[0], k.choices) if len(k.choices) > 8 else ''}".rstrip()
            )


def _wrong(k: Key, value: Any, where: str) -> ConfigError:
    return ConfigError(f"{where} {k.name} = {_shown(value)}: expected {_wanted(k)}")


def _wanted(k: Key) -> str:
    """The type (and range) wanted, in words."""
    kind = k.kind
    origin = typing.get_origin(kind)
    if kind is bool:
        return "true or false (a TOML boolean, without quotes)"
    if k.choices and (kind is str or origin is typing.Literal):
        return "one of " + ", ".join(json.dumps(c) for c in k.choices)
    if kind in (int, float):
        noun = "a whole number" if kind is int else "a number"
        unit = f" {k.unit}" if k.unit else ""
        if k.min is not None and k.max is not None:
            return f"{noun} from {_num(k.min)} to {_num(k.max)}{unit}"
        if k.min is not None:
            return f"{noun} of at least {_num(k.min)}{unit}"
        return f"{noun}{unit}" if k.max is None else f"{noun} of at most {_num(k.max)}{unit}"
    if kind is str:
        return "a string (in quotes)"
    if origin is tuple:
        least = f" (at least {k.min:g})" if k.min else ""
        return f'a list of strings{least}, e.g. ["a", "b"]'
    return "a table"


def type_words(k: Key) -> str:
    """The type column of docs/configuration.md's table."""
    kind, origin = k.kind, typing.get_origin(k.kind)
    if kind is bool:
        return "boolean"
    if kind is int:
        return "integer"
    if kind is float:
        return "number"
    if kind is str or origin is typing.Literal:
        return "string"
    if origin is tuple:
        return "list of strings"
    return "table"


def default_words(k: Key) -> str:
    if k.default is dataclasses.MISSING:
        return "required"
    if k.default is None:
        return "not set"
    if isinstance(k.default, bool):
        return "true" if k.default else "false"
    if isinstance(k.default, float):
        return _num(k.default)
    if isinstance(k.default, tuple):
        return "[" + ", ".join(json.dumps(v) for v in k.default) + "]"
    if isinstance(k.default, dict):
        return "{}"
    return json.dumps(k.default) if isinstance(k.default, str) else str(k.default)


def range_words(k: Key) -> str:
    if typing.get_origin(k.kind) is tuple and k.min:
        return f"at least {_num(k.min)}" + (f": {', '.join(k.choices)}" if k.choices else "")
    if k.choices:
        return ", ".join(k.choices)
    if k.min is None and k.max is None:
        return ""
    unit = f" {k.unit}" if k.unit else ""
    low = "" if k.min is None else _num(k.min)
    high = "" if k.max is None else _num(k.max)
    return f"{low} – {high}{unit}".strip()


# -- the command line's numbers, from the same declarations --------------------------------


def option(cls: type, attr: str) -> Callable[[str], Any]:
    """An argparse ``type=`` for the numeric field ``attr`` of ``cls``: a value of the wrong
    type, not finite or out of range is a usage error naming the range."""
    (k,) = (k for k in keys(cls) if k.attr == attr)

    def parse(text: str) -> Any:
        try:
            value: Any = int(text) if k.kind is int else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected {_wanted(k)}") from None
        if (isinstance(value, float) and not math.isfinite(value)) or not (
            (k.min is None or value >= k.min) and (k.max is None or value <= k.max)
        ):
            raise argparse.ArgumentTypeError(f"{text!r}: expected {_wanted(k)}")
        return value

    parse.__name__ = k.name  # argparse names the type in some of its own messages
    return parse


def default(cls: type, attr: str) -> Any:
    (k,) = (k for k in keys(cls) if k.attr == attr)
    return k.default


# -- helpers ---------------------------------------------------------------------------------


def _unwrap_optional(kind: Any) -> tuple[Any, bool]:
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return kind, False


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):  # a long one cut: a message stays one readable line
        return json.dumps(value) if len(value) <= 60 else f'{json.dumps(value[:40])[:-1]}…" ({len(value)} characters)'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        shown = json.dumps(value, default=str)
        return shown if len(shown) <= 60 else "a list"
    return repr(value)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


def as_dict(obj: Any) -> dict[str, Any]:
    """A table as its file keys and values (lists for tuples), e.g. for a verdict's dict."""
    return {
        k.name: (list(v) if isinstance(v := getattr(obj, k.attr), tuple) else v)
        for k in keys(type(obj))
    }


def overrides(cls: type[T], data: Mapping[str, Any] | None, where: str) -> T:
    """``build`` for a mapping that may be None (a section not given)."""
    return build(cls, dict(data or {}), where)
