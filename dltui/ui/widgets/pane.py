"""A bordered, focusable box on the node screen that draws one aspect of a node.

A pane repaints only the lines whose text or colours changed: a new sample every second moves
a sparkline or a figure on a few lines, while borders, headings and most values stay put (a
whole-pane repaint was three times the lines, composited and written to the terminal)."""

from __future__ import annotations

import math

from rich.segment import Segment
from textual import events
from textual.content import Content
from textual.geometry import Region
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.visual import Visual
from textual.widget import Widget

from dltui.core import format as fmt
from dltui.core.series import SeriesKey
from dltui.core.state import NodeState

from .. import levels
from ..plain import plain
from ..spark import downsample, sparkline

HISTORY_SPAN_S = 60  # a sparkline covers at least this; a wider pane shows more, never less


class Pane(Widget, can_focus=True, inherit_bindings=False):
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
        self._border_text: tuple[str | None, str | None] = (title, None)
        self._shown: tuple[NodeState, float] | None = None
        self._drawn: Content | None = None
        self._lines: list[Content] = []  # the drawing's lines

    def render(self) -> Content:
        return self._drawn if self._drawn is not None else Content()

    def render_line(self, y: int) -> Strip:
        """Line ``y`` of the drawing, rendered alone (Textual would render the whole drawing
        for any line of it); a wrapping pane's lines are the whole drawing's."""
        if self.styles.text_wrap == "wrap":
            return super().render_line(y)
        width = self.size.width
        if y >= len(self._lines):
            return Strip.blank(width, self.visual_style.rich_style)
        line = self._lines[y]
        if _plain_fit(line, width) and self.text_selection is None and self.styles.content_align == ("left", "top"):
            return _line_strip(line, self.visual_style, y)
        strips = Visual.to_strips(self, line, width, 1, self.visual_style)
        # where each character is in the pane, for mouse selection (as Textual's Log does)
        return strips[0].apply_offsets(0, y) if strips else Strip.blank(width, self.visual_style.rich_style)

    def show(self, node: NodeState, now: float) -> None:
        self._shown = (node, now)
        content = self.draw(node, now)
        old = self._drawn
        if old is not None and same(content, old):  # the same picture: no repaint
            return
        old_lines, self._lines = self._lines, content.split("\n", allow_blank=True)
        self._drawn = content
        wraps = self.styles.text_wrap == "wrap"  # a text line may then take several on screen
        if old is None or _height(content, self, wraps) != _height(old, self, wraps):
            self.refresh(layout=True)  # a layout pass only when the pane may change height
        elif wraps:
            self.refresh()
        else:
            width = self.size.width
            pairs = enumerate(zip(self._lines, old_lines, strict=True))
            changed = [Region(0, y, width, 1) for y, (new, was) in pairs if not same(new, was)]
            if changed:  # (no region at all would repaint the whole pane)
                self.refresh(*changed)

    def set_border_text(self, title: str | None = None, subtitle: str | None = None) -> None:
        """The border's title and subtitle, assigned only when they change (``None``: keep it):
        Textual repaints the whole pane on every assignment, even of the same text."""
        old_title, old_subtitle = self._border_text
        if title is not None and title != old_title:
            self._set_border_line("border_title", title, top=True)
        if subtitle is not None and subtitle != old_subtitle:
            self._set_border_line("border_subtitle", subtitle, top=False)
        self._border_text = (old_title if title is None else title, old_subtitle if subtitle is None else subtitle)

    def _set_border_line(self, name: str, text: str, *, top: bool) -> None:
        """Textual's ``border_title``/``border_subtitle`` setters repaint the whole pane; the
        text sits on one border line, so only that line is repainted (a sparkline pane's span
        grows every second for its first minute: whole panes were most of what was written)."""
        content = plain(text)  # a GPU's model comes from the node: never markup
        outer = self.outer_size
        if not self.is_mounted or not outer.height:
            setattr(self, name, content)  # not on screen yet: Textual's own way
            return
        # what Textual's setter stores (widget._BorderTitle), without its whole-pane refresh
        setattr(self, "_" + name, content.expand_tabs(4).split()[0])
        offset = self.content_offset  # refresh regions are relative to the content
        row = 0 if top else outer.height - 1
        self.refresh(Region(-offset.x, row - offset.y, outer.width, 1))

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

    def spark(self, node: NodeState, key: SeriesKey, width: int, low: float, high: float, pick=max) -> str:
        """The sparkline of one history series, squeezed to ``width`` characters."""
        per_char = _samples_per_char(node, width)
        values = node.history.get(key, width * per_char)
        return sparkline(downsample(values, per_char, pick), width, low, high)

    def span_label(self, node: NodeState, width: int) -> str:
        """How much time a sparkline of ``width`` covers, never more than was collected:
        shown in the pane's border."""
        return "last " + fmt.duration(span_s(node, width))


def span_s(node: NodeState, width: int) -> float:
    """Seconds of history a sparkline of ``width`` shows: its room, or what there is."""
    samples = min(_samples_per_char(node, width) * width, len(node.history.time))
    return samples * node.interval_s


def _plain_fit(line: Content, width: int) -> bool:
    """A line ``_line_strip`` draws as Textual would: it fits (nothing to cut or mark with an
    ellipsis), has no tab to expand, and its styles are plain words (no component class, no
    link: nothing that needs the widget's lookup or its link styling)."""
    return (
        line.cell_length <= width
        and "\t" not in line.plain
        and all(isinstance(span.style, str) and not span.style.startswith(".") and "link" not in span.style
                for span in line.spans)
    )


def _parse_style(style: str | VisualStyle) -> VisualStyle:
    """A span's style as Textual's widgets parse it (no component class: ``_plain_fit``)."""
    if isinstance(style, VisualStyle):
        return style
    try:
        return VisualStyle.parse(style)
    except Exception:  # what Textual draws for a style it cannot read: nothing
        return VisualStyle()


def _line_strip(line: Content, base: VisualStyle, y: int) -> Strip:
    """One line that fits, drawn as ``Visual.to_strips`` draws it for a left-aligned, unwrapped
    pane with no selection — segments with their offsets for the mouse — without its general
    machinery (wrapping, cropping, alignment, links, selection): a third of its cost, and each
    second's changed lines of every pane go through here (tests/ui/test_pane_lines.py compares
    both)."""
    segments = []
    x = 0
    for text, style in line.render(base, end="", parse_style=_parse_style):
        segments.append(Segment(text, (base + style).rich_style_with_offset(x, y)))
        x += len(text)
    return Strip(segments, line.cell_length)


def same(a: Content, b: Content) -> bool:
    """The same text in the same styles (``Content`` equality compares the text only)."""
    return a.plain == b.plain and a.spans == b.spans


def lines_on(widget: Widget, content: Content) -> int:
    """How many lines ``content`` takes in ``widget`` as it wraps there."""
    # Textual passes a widget's styles as the rules itself (Widget.get_content_height)
    return content.get_height(widget.styles, widget.size.width)  # type: ignore[arg-type]


def _height(content: Content, pane: Pane, wraps: bool) -> int:
    return lines_on(pane, content) if wraps else content.plain.count("\n") + 1


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
