"""Every key, the filter syntax and the ``:`` commands, on one page."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from ..commands import COMMANDS
from ..fleet_query import KEYS, SORT_KEYS

KEYS_HELP: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        "Everywhere",
        (
            ("q", "quit"),
            ("?", "this help"),
            (":", "command line (see below)"),
            ("t", "next theme"),
            ("ctrl+p", "command palette: every command, searchable"),
            ("tab / shift+tab", "next / previous pane"),
            ("mouse", "click selects, double click opens, wheel scrolls"),
        ),
    ),
    (
        "Fleet",
        (
            ("j / k  ↓ / ↑", "next / previous node"),
            ("h / l  ← / →", "previous / next tile (compact view)"),
            ("pgup / pgdn", "a page up / down"),
            ("g / G  home / end", "first / last node"),
            ("enter", "open the node"),
            ("/", "filter (applied as you type; enter keeps it, escape undoes)"),
            ("escape", "clear the filter"),
            ("s", f"next sort: {', '.join(SORT_KEYS)}"),
            ("c", "compact view: one character per GPU, for hundreds of nodes"),
            ("space", "pick the node for an action on several (▶)"),
            ("R / X / U", "restart / stop / start the unit on the picked nodes (or this one)"),
            ("v", "chart: the hottest GPU per node over time"),
            ("V", "the software stack: kernel, driver, CUDA, held, upgrades, reboot per node"),
        ),
    ),
    (
        "Node",
        (
            ("j / k  ↓ / ↑", "scroll"),
            ("pgup / pgdn", "scroll a page"),
            ("escape", "back to the fleet"),
            ("a", "acknowledge XID, ECC and missing-GPU alerts"),
            ("R / X / U", "restart / stop / start its unit (confirmed, verified, audited)"),
            ("K", "TERM a GPU process (KILL after a second confirmation)"),
            ("v", "charts of the GPU in focus (the first GPU otherwise)"),
        ),
    ),
    (
        "Charts",
        (
            ("w  1 / 2 / 3", "next window / 5 min, 30 min, 2 h"),
            ("] / [  n / p", "next / previous GPU"),
            ("o", "every GPU's temperature on one chart, or back to one GPU"),
            ("escape", "back"),
        ),
    ),
)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]
    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
    }
    HelpScreen > VerticalScroll {
        width: 84;
        max-width: 100%;
        height: auto;
        max-height: 100%;
        border: round $border;
        border-title-color: $text;
        background: $surface;
        padding: 0 1;
    }
    """

    def compose(self) -> ComposeResult:
        box = VerticalScroll()
        box.border_title = "dltui keys · escape closes"
        with box:
            yield Static(help_content())

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)


def help_content() -> Content:
    lines: list[Content] = []
    for section, keys in KEYS_HELP:
        lines.append(Content.styled(section, "bold $text-primary"))
        for key, what in keys:
            lines.append(Content.assemble((f"  {key:<20}", "bold $text-accent"), what))
        lines.append(Content(""))
    lines.append(Content.styled("Filter (/): terms that must all hold", "bold $text-primary"))
    lines.append(
        Content.assemble(
            ("  KEY OP VALUE ", "bold $text-accent"),
            "op: > < >= <= = !=; a GPU key holds if any GPU does; n/a never matches",
        )
    )
    lines.append(
        Content.assemble(("  text         ", "bold $text-accent"), "part of the node's name, status or reason")
    )
    lines.append(Content.styled("  keys: " + ", ".join(KEYS), "$foreground-muted"))
    lines.append(Content(""))
    lines.append(Content.styled("Commands (:)", "bold $text-primary"))
    for usage, what in COMMANDS.values():
        lines.append(Content.assemble((f"  {usage:<20}", "bold $text-accent"), what))
    return Content("\n").join(lines)
