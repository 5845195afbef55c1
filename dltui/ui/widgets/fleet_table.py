"""The fleet: one line per node, or tiles (one character per GPU) in the compact view.

A Line-API widget: only the lines on screen are drawn, each from a cache keyed by the node's
``version`` and shown age, so a tick with nothing new repaints nothing. Line 0 is the column
header and stays put while the rows scroll under it.
A line of tiles is joined from strips of the tiles' parts (``fleet_cells.TileStrips``).
"""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.content import Content
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.style import Style
from textual.visual import Visual

from dltui.core import format as fmt
from dltui.core.state import NodeState

from .. import levels
from . import fleet_cells, fleet_row

COMPACT_LEGEND = (
    "one character per GPU: height = utilisation, colour = temperature, reversed = hot"
    " · ● ok ◐ stale ✖ down · ▲ critical △ warning"
)


class FleetTable(ScrollView, can_focus=True):
    """Nodes in the order the screen gives; Enter (or a double click) opens one."""

    DEFAULT_CSS = """
    FleetTable {
        height: 1fr;
        background: $surface;
        scrollbar-gutter: stable;
    }
    FleetTable > .fleet-table--cursor {
        background: $primary 30%;
    }
    """
    COMPONENT_CLASSES = {"fleet-table--cursor"}
    BINDINGS = [
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("right,l", "move_across(1)", "Right", show=False),
        Binding("left,h", "move_across(-1)", "Left", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("home,g", "jump(0)", "First", show=False),
        Binding("end,G", "jump(-1)", "Last", show=False),
        Binding("enter", "open", "Open node"),
        Binding("space", "mark", "Pick", show=False),
    ]

    compact: reactive[bool] = reactive(False)
    """Tiles instead of rows: for fleets taller than the screen."""

    class Opened(Message):
        """The operator asked to see one node."""

        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self, thresholds: levels.NodeThresholds, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.thresholds = thresholds
        self.nodes: list[NodeState] = []
        self.cursor = 0
        self.now = 0.0
        self._name_w = 4
        self._gpus = 0
        self._units = False  # some node reports a training unit: the UNIT column is shown
        self._fabric = False  # some node reports an HCA port or NVLink: the FABRIC column
        self._jobs = False  # some node's GPU processes carry an owner or a job: the JOBS column
        self._sched = False  # some node has a scheduler's word (Slurm, Kubernetes): the SCHED column
        self._layout: fleet_row.Layout | None = None
        self._per_line = 1  # nodes a line shows: set with the layout
        self._keys: dict[int, tuple] = {}  # line on screen -> what was drawn there
        self._strips: dict[tuple, Strip] = {}
        self._node_cells = fleet_cells.NodeCells(thresholds)
        self.marked: set[str] = set()  # nodes picked (space) for an action on several at once
        self._tiles = fleet_cells.TileStrips(self._to_strip, self._highlight)

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._redraw_all())

    # -- data in ------------------------------------------------------------------------------

    def show(self, nodes: list[NodeState], now: float) -> None:
        """Called on every tick with the nodes to list: repaints only the lines that changed."""
        self.now = now
        selected = self.selected
        if nodes is not self.nodes and [n.name for n in nodes] != [n.name for n in self.nodes]:
            self.nodes = nodes
            self._name_w = max((len(n.name) for n in nodes), default=4)
            self._gpus = max((len(n.sample.gpus) for n in nodes if n.sample), default=self._gpus)
            self._units = self._units or any(n.sample.units for n in nodes if n.sample)
            self._fabric = self._fabric or _has_fabric(nodes)
            self._jobs = self._jobs or any(fleet_row.has_jobs(n.sample) for n in nodes)
            self._sched = self._sched or any(fleet_row.has_sched(n) for n in nodes)
            names = [n.name for n in nodes]
            self.cursor = (
                names.index(selected.name)
                if selected and selected.name in names
                else min(self.cursor, max(0, len(nodes) - 1))
            )
            self._relayout()
            return
        gpus = max((len(n.sample.gpus) for n in nodes if n.sample), default=self._gpus)
        units = self._units or any(n.sample.units for n in nodes if n.sample)
        fabric = self._fabric or _has_fabric(nodes)
        jobs = self._jobs or any(fleet_row.has_jobs(n.sample) for n in nodes)
        sched = self._sched or any(fleet_row.has_sched(n) for n in nodes)
        if (gpus, units, fabric, jobs, sched) != (self._gpus, self._units, self._fabric, self._jobs, self._sched):
            self._gpus, self._units, self._fabric, self._jobs, self._sched = gpus, units, fabric, jobs, sched
            self._relayout()
            return
        self.nodes = nodes
        region = self.scrollable_content_region
        cursor, focus = self.selected, 1 if self.has_focus else 2
        for y in range(1, region.height):
            if self._keys.get(y) != self._line_key(y, cursor, focus):
                self.refresh(Region(0, y, region.width, 1))

    @property
    def selected(self) -> NodeState | None:
        return self.nodes[self.cursor] if 0 <= self.cursor < len(self.nodes) else None

    @property
    def per_line(self) -> int:
        return self._per_line

    def watch_compact(self) -> None:
        self._relayout()

    def on_resize(self, event: events.Resize) -> None:
        self._relayout()

    def _relayout(self) -> None:
        width = self.scrollable_content_region.width
        self._layout = fleet_row.choose_layout(
            width, self._name_w, self._gpus, self._units, self._fabric, jobs=self._jobs, sched=self._sched
        )
        tile = fleet_row.tile_width(self._name_w, self._gpus) + 2
        self._per_line = max(1, width // tile) if self.compact else 1
        lines = -(-len(self.nodes) // self.per_line)
        self.virtual_size = Size(width, lines + 1)
        self._redraw_all()
        self._scroll_cursor_into_view()

    def _redraw_all(self) -> None:
        self._strips.clear()
        self._node_cells.clear()
        self._tiles.clear()
        self._keys.clear()
        self.refresh()

    # -- drawing ------------------------------------------------------------------------------

    def _line_nodes(self, y: int) -> list[NodeState]:
        first = (int(self.scroll_y) + y - 1) * self.per_line
        return self.nodes[first : first + self.per_line] if first >= 0 else []

    def _line_key(self, y: int, cursor: NodeState | None, focus: int) -> tuple:
        """Everything line ``y`` shows, exactly (``Content`` compares its text only, so a colour
        change or the cursor moving along a line of tiles is not in a Content comparison);
        ``focus`` marks the cursor's node: 1 with the table focused, 2 without."""
        nodes = self._line_nodes(y)
        if self.compact:  # a tile shows no age: it is repainted only when its picture changed
            return tuple((self._cell(n)[0], focus if n is cursor else 0) for n in nodes)
        return tuple(
            (n.name, n.version, fmt.age(n.age(self.now)), focus if n is cursor else 0, n.name in self.marked)
            for n in nodes
        )

    def _current_layout(self) -> fleet_row.Layout:
        if self._layout is None:  # drawn before the first resize
            self._relayout()
        assert self._layout is not None
        return self._layout

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if y == 0:
            key: tuple = ("header", self.compact, width)
        else:
            key = self._line_key(y, self.selected, 1 if self.has_focus else 2)
        self._keys[y] = key
        strip = self._strips.get((key, width))
        if strip is None:
            if y == 0:
                content = (
                    Content.styled(COMPACT_LEGEND, fleet_row.HEADER_STYLE)
                    if self.compact
                    else fleet_row.header(self._current_layout())
                )
                strip = self._to_strip(content, width)
            elif self.compact:
                strip = self._tile_line(y, width)
            else:
                strip = self._to_strip(self._content(y), width)
            if len(self._strips) > 4096:  # bounded: old frames are never drawn again
                self._strips.clear()
            self._strips[(key, width)] = strip
        return strip

    def _to_strip(self, content: Content, width: int) -> Strip:
        return Visual.to_strips(self, content, width, 1, self.visual_style, pad=True)[0]

    def _tile_line(self, y: int, width: int) -> Strip:
        cursor, focus = self.selected, 1 if self.has_focus else 2
        pictures = [(self._cell(n)[0], focus if n is cursor else 0) for n in self._line_nodes(y)]
        return self._tiles.line(pictures, width)

    def _highlight(self) -> Style | str:
        return self.get_visual_style("fleet-table--cursor") if self.has_focus else "on $boost"

    def _content(self, y: int) -> Content:
        """A line of rows (one node a line); tiles are drawn by ``_tile_line``."""
        cursor = self.selected
        parts = []
        for n in self._line_nodes(y):
            _, cell = self._cell(n)
            assert cell is not None
            if n is cursor:
                cell = cell.pad_right(max(0, self.scrollable_content_region.width - cell.cell_length))
                cell = cell.stylize_before(self._highlight())
            parts.append(cell)
        return Content.assemble(*parts).simplify()

    def warm(self, nodes: list[NodeState], now: float) -> None:
        """Draw into the cell cache what the visible lines would show of ``nodes`` at ``now``,
        repainting nothing: a large fleet's redraw does it one event-loop turn before ``show``
        with the same arguments, which then finds the changed cells drawn."""
        if self._layout is None or [n.name for n in nodes] != [n.name for n in self.nodes]:
            return  # ``show`` lays the table out anew (and clears the cache)
        first = int(self.scroll_y) * self.per_line
        for n in nodes[first : first + self.scrollable_content_region.height * self.per_line]:
            self._cell(n, now)

    def _cell(self, node: NodeState, now: float | None = None) -> tuple[tuple, Content | None]:
        """A node's row or tile (cached in ``NodeCells``) and what it shows, as an exact key: a
        tile's (text, style) parts (drawn from them by ``_tile_line``, no Content), a row's node
        version and age with its Content. ``now``: the table's by default."""
        now = self.now if now is None else now
        marked = node.name in self.marked
        if self.compact:
            return self._node_cells.tile(node, now, self._name_w, self._gpus, marked), None
        layout = self._current_layout()
        return self._node_cells.row(node, now, layout, self._name_w, self._gpus, marked)

    # -- moving -------------------------------------------------------------------------------

    def _move_to(self, index: int) -> None:
        if not self.nodes:
            return
        before = self.cursor
        self.cursor = max(0, min(len(self.nodes) - 1, index))
        if self._scroll_cursor_into_view():
            self.refresh()  # the rows move: all of them
        else:  # a key answers within a frame: only the lines the cursor left and entered
            self._refresh_node_line(before)
            self._refresh_node_line(self.cursor)

    def _refresh_node_line(self, index: int) -> None:
        y = index // self.per_line - int(self.scroll_y) + 1
        if 1 <= y < self.scrollable_content_region.height:
            self.refresh(Region(0, y, self.scrollable_content_region.width, 1))

    def _scroll_cursor_into_view(self) -> bool:
        """Whether it had to scroll."""
        line = self.cursor // self.per_line
        rows = max(1, self.scrollable_content_region.height - 1)
        if line < self.scroll_y:
            self.scroll_to(y=line, animate=False)
        elif line >= self.scroll_y + rows:
            self.scroll_to(y=line - rows + 1, animate=False)
        else:
            return False
        return True

    def action_mark(self) -> None:
        """Pick or unpick the node under the cursor for a fleet action, then move on."""
        node = self.selected
        if node is None:
            return
        self.marked ^= {node.name}
        self._move_to(self.cursor + 1)
        self.refresh()

    def action_move(self, lines: int) -> None:
        self._move_to(self.cursor + lines * self.per_line)

    def action_move_across(self, step: int) -> None:
        if self.compact:
            self._move_to(self.cursor + step)

    def action_page(self, pages: int) -> None:
        rows = max(1, self.scrollable_content_region.height - 2)
        self._move_to(self.cursor + pages * rows * self.per_line)

    def action_jump(self, index: int) -> None:
        self._move_to(index if index >= 0 else len(self.nodes) - 1)

    def action_open(self) -> None:
        if self.selected is not None:
            self.post_message(self.Opened(self.selected.name))

    def on_click(self, event: events.Click) -> None:
        line = int(self.scroll_y) + event.y - 1
        if event.y < 1 or line < 0:
            return
        column = event.x // (fleet_row.tile_width(self._name_w, self._gpus) + 2) if self.compact else 0
        if column >= self.per_line:
            return
        index = line * self.per_line + column
        if index < len(self.nodes):
            self._move_to(index)
            if event.chain >= 2:
                self.action_open()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()


def _has_fabric(nodes: list[NodeState]) -> bool:
    return any(n.sample.ib_ports or n.sample.nvlinks for n in nodes if n.sample)
