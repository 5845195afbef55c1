"""The Prometheus text format's building blocks (format 0.0.4): label sets escaped once,
families of samples, a page of families in a fixed order. ``metrics`` fills a page with the
node and GPU families; ``fabric`` and ``drive_metrics`` add theirs to the same page.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

MIB = 1024 * 1024
MHZ = 1_000_000
PERCENT = 0.01
US = 1e-6


def escape_label(value: str) -> str:
    """Label values escape backslash, double quote and newline (the text format's rule)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Labels(str):
    """A label set, rendered and escaped once (``node="a",gpu="0"``): a GPU's labels are
    written into some thirty families, so they are not rebuilt for each. ``+`` appends pairs."""

    __slots__ = ()

    def __add__(self, other: object) -> Labels:
        more = other if isinstance(other, Labels) else labels(*other)  # type: ignore[misc]
        if not more:
            return self
        return Labels(f"{self},{more}" if self else more)


def labels(*pairs: tuple[str, str | None]) -> Labels:
    """Pairs whose value is known: an unknown fact is left out, not written as ''."""
    return Labels(",".join(f'{k}="{escape_label(v)}"' for k, v in pairs if v is not None))


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
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
    name: str
    type: str  # "gauge" or "counter"
    help: str
    samples: list[tuple[Labels, float]] = field(default_factory=list)

    def add(self, labels: Labels, value: float | int | bool | None, scale: float = 1.0) -> None:
        if value is None:
            return  # not reported: no series
        self.samples.append((labels, value * scale if scale != 1.0 else value))

    def lines(self) -> Iterator[str]:
        if not self.samples:
            return
        yield f"# HELP {self.name} {_escape_help(self.help)}"
        yield f"# TYPE {self.name} {self.type}"
        for body, value in self.samples:
            if body:
                yield f"{self.name}{{{body}}} {_number(value)}"
            else:
                yield f"{self.name} {_number(value)}"


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
        return "".join(line + "\n" for fam in self.families.values() for line in fam.lines())
