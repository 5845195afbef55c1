"""The Prometheus text format's building blocks (format 0.0.4): label sets escaped once,
families of samples, a page of families in a fixed order. ``metrics`` fills a page with the
node and GPU families; ``fabric`` and ``drive_metrics`` add theirs to the same page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

MIB = 1024 * 1024
MHZ = 1_000_000
PERCENT = 0.01
US = 1e-6


# A scrape of 64 x 8 GPUs builds some 26,000 label sets, the same ones scrape after scrape:
# each is escaped and joined once, then looked up (half a changed scrape's CPU was spent here).
# Bounded: a fleet's label sets are some tens of thousands; past the bound the cache starts over.
LABEL_CACHE_MAX = 1 << 18
_LABELS: dict[tuple, Labels] = {}
_JOINED: dict[tuple[Labels, object], Labels] = {}


def escape_label(value: str) -> str:
    """Label values escape backslash, double quote and newline (the text format's rule)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Labels(str):
    """A label set, rendered and escaped once (``node="a",gpu="0"``): a GPU's labels are
    written into some thirty families, so they are not rebuilt for each. ``+`` appends pairs."""

    __slots__ = ()

    def __add__(self, other: object) -> Labels:
        key = (self, other)
        joined = _JOINED.get(key)
        if joined is None:
            more = other if isinstance(other, Labels) else labels(*other)  # type: ignore[misc]
            joined = Labels(f"{self},{more}" if self and more else self or more)
            if len(_JOINED) >= LABEL_CACHE_MAX:
                _JOINED.clear()
            _JOINED[key] = joined
        return joined


def labels(*pairs: tuple[str, str | None]) -> Labels:
    """Pairs whose value is known: an unknown fact is left out, not written as ''."""
    made = _LABELS.get(pairs)
    if made is None:
        made = Labels(",".join(f'{k}="{escape_label(v)}"' for k, v in pairs if v is not None))
        if len(_LABELS) >= LABEL_CACHE_MAX:
            _LABELS.clear()
        _LABELS[pairs] = made
    return made


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if type(value) is float and value - value == 0.0:  # finite: the common case first
        return repr(value)
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


@dataclass
class Family:
    """One metric's samples, each written as its line when added (a scrape writes each once)."""

    name: str
    type: str  # "gauge" or "counter"
    help: str
    samples: list[str] = field(default_factory=list)  # the lines, without their newline

    def add(self, labels: Labels, value: float | int | bool | None, scale: float = 1.0) -> None:
        if value is None:
            return  # not reported: no series
        if scale != 1.0:
            value = value * scale
        # a finite float first: most values, and repr() is their text
        text = repr(value) if type(value) is float and value - value == 0.0 else _number(value)
        self.samples.append(f"{self.name}{{{labels}}} {text}" if labels else f"{self.name} {text}")

    def lines(self) -> list[str]:
        if not self.samples:
            return []
        return [
            f"# HELP {self.name} {_escape_help(self.help)}",
            f"# TYPE {self.name} {self.type}",
            *self.samples,
        ]


class Page:
    """The families of one page, in a fixed order, filled node by node."""

    def __init__(self) -> None:
        self.families: dict[str, Family] = {}

    def family(self, name: str, type_: str, help_: str) -> Family:
        fam = self.families.get(name)
        if fam is None:
            fam = self.families[name] = Family(name, type_, help_)
        return fam

    def text(self) -> str:
        out: list[str] = []
        for fam in self.families.values():
            out.extend(fam.lines())
        out.append("")
        return "\n".join(out)
