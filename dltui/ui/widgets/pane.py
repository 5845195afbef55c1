"""A bordered, focusable box on the node screen that draws one aspect of a node."""

from __future__ import annotations

import math

from textual import events
from textual.content import Content
from textual.widgets import Static

from dltui.core import format as fmt
from dltui.core.state import NodeState

from .. import levels
from ..plain import plain
from ..spark import downsample, sparkline

HISTORY_SPAN_S = 60  # a sparkline covers at least this; a wider pane shows more, never less


class Pane(Static, can_focus=True):
    """Subclasses implement ``draw``; the screen calls ``show`` when the node changed."""

    DEFAULT_CSS = """
    Pane {
        height: auto;
        border: round $foreground 20%;
        border-title-color: $text-muted;
        border-title-style: bold;
        border-subtitle-color: $text-muted;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    Pane:focus {
        border: round $border;
        border-title-color: $text;
    }
    """

    def __init__(self, title: str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.border_title = plain(title)
        self._shown: tuple[NodeState, float] | None = None
        self._drawn: Content | None = None

    def show(self, node: NodeState, now: float) -> None:
        self._shown = (node, now)
        content = self.draw(node, now)
        if content == self._drawn:  # the same picture: no repaint
            return
        # A layout pass only when the pane may change height: its line count changed, or it wraps.
        relayout = (
            self._drawn is None
            or content.plain.count("\n") != self._drawn.plain.count("\n")
            or self.styles.text_wrap == "wrap"
        )
        self._drawn = content
        self.update(content, layout=relayout)

    def draw(self, node: NodeState, now: float) -> Content:
        raise NotImplementedError

    def on_resize(self, event: events.Resize) -> None:
        if self._shown is not None:  # sparklines follow the width
            self._drawn = None
            self.show(*self._shown)

    # -- helpers for subclasses ---------------------------------------------------------------

    @property
    def inner_width(self) -> int:
        return max(10, self.content_region.width or self.size.width or 40)

    def spark(self, node: NodeState, key: str, width: int, low: float, high: float, pick=max) -> str:
        """The sparkline of one history series, squeezed to ``width`` characters."""
        per_char = _samples_per_char(node, width)
        values = node.history.get(key, width * per_char)
        return sparkline(downsample(values, per_char, pick), width, low, high)

    def span_label(self, node: NodeState, width: int) -> str:
        """How much time a sparkline of ``width`` covers: shown in the pane's border."""
        return "last " + fmt.duration(_samples_per_char(node, width) * width * node.interval_s)


def _samples_per_char(node: NodeState, width: int) -> int:
    return max(1, math.ceil(HISTORY_SPAN_S / node.interval_s / max(1, width)))


def metric_line(label: str, value: str, level: str, spark: str, label_w: int = 7, value_w: int = 6) -> Content:
    """``util   100% ▇▇▇▇▇``: the shape every sparkline row shares."""
    return Content.assemble(
        (label.ljust(label_w), "$foreground-muted"),
        (value.rjust(value_w), levels.STYLE[level] if level not in (levels.OK,) else "bold"),
        " ",
        (spark, "$primary" if level in (levels.OK, levels.IDLE) else levels.STYLE[level]),
    )


def labelled(*pairs) -> Content:
    """``user 1%  sys 0%``: muted labels, each followed by its value (text, or (text, style))."""
    parts: list = []
    for label, value in zip(pairs[::2], pairs[1::2], strict=False):  # an odd last label has no value
        parts += [(label, "$foreground-muted"), value]
    return Content.assemble(*parts)


def waiting(node: NodeState) -> Content:
    if node.status != "ok" and node.reason:
        return Content.styled(f"{node.status}: {node.reason}", "$foreground-muted")
    return Content.styled("waiting for the first sample…", "$foreground-muted")
