"""What the fleet table draws for each node: its row, or its tile in the compact view, rebuilt
only when the node or its shown age changed, with what it shows as an exact key."""

from __future__ import annotations

from textual.content import Content

from dltui.core import format as fmt
from dltui.core.state import NodeState

from .. import levels
from . import fleet_row


class NodeCells:
    def __init__(self, thresholds: levels.NodeThresholds) -> None:
        self.thresholds = thresholds
        self._cells: dict[str, tuple[tuple, tuple, Content]] = {}
        self._tiles: dict[tuple, Content] = {}  # what a tile draws -> its Content

    def clear(self) -> None:
        self._cells.clear()
        self._tiles.clear()

    def tile(self, node: NodeState, name_w: int, gpus: int, marked: bool) -> tuple[tuple, Content]:
        """(what it shows, exactly: the tile's (text, style) parts; its Content)."""
        key = (node.version, True, name_w, gpus, marked)
        cached = self._cells.get(node.name)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        parts = fleet_row.tile_parts(node, name_w, gpus, self.thresholds.of(node.name))
        cell = self._tiles.get(parts)
        if cell is None:
            if len(self._tiles) > 8192:  # bounded: pictures no node shows any more
                self._tiles.clear()
            cell = self._tiles[parts] = Content.assemble(*parts).pad_right(2)
        return self._keep(node, key, (parts, marked), cell, marked)

    def row(
        self, node: NodeState, now: float, layout: fleet_row.Layout, name_w: int, gpus: int,
        marked: bool,
    ) -> tuple[tuple, Content]:
        """(what it shows, exactly: the node's version and shown age; its Content)."""
        key = (node.version, fmt.age(node.age(now)), False, layout, name_w, gpus, marked)
        cached = self._cells.get(node.name)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        cell = fleet_row.row(node, now, layout, self.thresholds.of(node.name))
        return self._keep(node, key, (node.name, key), cell, marked)

    def _keep(
        self, node: NodeState, key: tuple, picture: tuple, cell: Content, marked: bool
    ) -> tuple[tuple, Content]:
        if marked:  # picked for a fleet action: the row's first column says so
            cell = Content.assemble(("▶", "bold $text-accent"), cell[1:])
        self._cells[node.name] = (key, picture, cell)
        return picture, cell
