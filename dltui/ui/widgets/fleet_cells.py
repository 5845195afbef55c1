"""What the fleet table draws for each node: its row, or its tile in the compact view, rebuilt
only when the node or its shown age changed, with what it shows as an exact key; and the lines
of tiles, joined from strips of the tiles' parts.

A tile's parts are its name, status glyph, one character per GPU and alert badge, each rendered
once per (text, style): a new sample gives a tile a new picture almost every second, and
rendering each picture as Content cost half a millisecond. Adjacent parts of one style are
merged into one segment, so a line of healthy tiles is a few dozen segments, not a hundred:
fewer to composite and fewer escape sequences written to the terminal."""

from __future__ import annotations

from collections.abc import Callable

from textual.content import Content
from textual.strip import Strip
from textual.style import Style

from dltui.core import format as fmt
from dltui.core.state import NodeState

from .. import levels
from . import fleet_row


class NodeCells:
    def __init__(self, thresholds: levels.NodeThresholds) -> None:
        self.thresholds = thresholds
        self._cells: dict[str, tuple[tuple, tuple, Content | None]] = {}  # name -> (key, picture, row)

    def clear(self) -> None:
        self._cells.clear()

    def tile(self, node: NodeState, now: float, name_w: int, gpus: int, marked: bool) -> tuple:
        """What the tile shows, exactly: its (text, style) parts and whether it is marked. The
        table draws it from cached strips of those parts (``FleetTable._tile_line``): a new
        sample gives a tile a new picture almost every second, and building it as Content cost
        half a millisecond. Going stale moves the node's version too (node_stale's alert opens
        on the tick its limit passes, the limit ``levels.is_stale`` reads), as the summary counts."""
        key = (node.version, True, name_w, gpus, marked)
        cached = self._cells.get(node.name)
        if cached is not None and cached[0] == key:
            return cached[1]
        picture = (fleet_row.tile_parts(node, now, name_w, gpus, self.thresholds.of(node.name)), marked)
        self._cells[node.name] = (key, picture, None)
        return picture

    def row(
        self, node: NodeState, now: float, layout: fleet_row.Layout, name_w: int, gpus: int,
        marked: bool,
    ) -> tuple[tuple, Content]:
        """(what it shows, exactly: the node's version and shown age; its Content)."""
        key = (node.version, fmt.age(node.age(now)), False, layout, name_w, gpus, marked)
        cached = self._cells.get(node.name)
        if cached is not None and cached[0] == key and cached[2] is not None:
            return cached[1], cached[2]
        cell = fleet_row.row(node, now, layout, self.thresholds.of(node.name))
        if marked:  # picked for a fleet action: the row's first column says so
            cell = Content.assemble(("▶", "bold $text-accent"), cell[1:])
        picture = (node.name, key)
        self._cells[node.name] = (key, picture, cell)
        return picture, cell


class TileStrips:
    """Lines of tiles from cached strips. ``to_strip(content, width)`` renders with the table's
    style; ``highlight()`` is the cursor's style now (it follows the focus and the theme)."""

    def __init__(
        self, to_strip: Callable[[Content, int], Strip], highlight: Callable[[], Style | str]
    ) -> None:
        self._to_strip = to_strip
        self._highlight = highlight
        self._parts: dict[tuple, Strip] = {}  # (text, style, cursor on it) -> its Strip
        self._tiles: dict[tuple, Strip] = {}  # (what a tile draws, cursor on it) -> its Strip

    def clear(self) -> None:
        self._parts.clear()
        self._tiles.clear()

    def line(self, pictures: list[tuple[tuple, int]], width: int) -> Strip:
        """A line of tiles (``NodeCells.tile`` pictures, each with its cursor state: 0 off, 1 on
        the focused table, 2 on the table unfocused), padded or cropped to ``width``. Each tile is
        joined once per picture, not once per line it appears in."""
        strips = []
        used = 0
        for picture, state in pictures:
            strip = self._tiles.get((picture, state))
            if strip is None:
                parts, marked = picture
                if marked:  # picked for a fleet action: the tile's first character says so
                    (name, name_style), *rest = parts
                    parts = (("▶", "bold $text-accent"), (name[1:], name_style), *rest)
                strip = Strip.join([self._part(text, style, state) for text, style in (*parts, ("  ", ""))])
                if len(self._tiles) > 8192:  # bounded: pictures no node shows any more
                    self._tiles.clear()
                self._tiles[(picture, state)] = strip
            strips.append(strip)
            used += strip.cell_length
        if used < width:
            strips.append(self._part(" " * (width - used), "", 0))
        return Strip.join(strips).simplify().crop(0, width)

    def _part(self, text: str, style: str, state: int) -> Strip:
        """One part of a tile (``state``: the cursor is on its tile), rendered once."""
        strip = self._parts.get((text, style, state))
        if strip is None:
            content = Content.styled(text, style) if style else Content(text)
            if state:
                content = content.stylize_before(self._highlight())
            strip = self._to_strip(content, content.cell_length)
            if len(self._parts) > 8192:  # bounded: names of nodes gone, odd badges
                self._parts.clear()
            self._parts[(text, style, state)] = strip
        return strip
