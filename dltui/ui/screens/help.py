"""Every key, the filter syntax and the ``:`` commands, on one page."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from ..commands import COMMANDS
from ..fleet_query import KEYS, SORT_KEYS

KEYS_HELP: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        "Everywhere",
        (
            ("q  ctrl+c", "quit"),
            ("?", "this help"),
            (":", "command line (see below)"),
            ("t", "next theme"),
            ("+ / -", "sample less / more often: 0.5, 1, 2, 3, 5, 10 s (the probes are told)"),
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
            ("r / x / u", "restart / stop / start the training container of the node (one node)"),
            ("D / E", "drain (reason asked, prefilled from the worst alert) / resume in Slurm"),
            ("O / N", "cordon / uncordon in Kubernetes (the picked nodes, or this one)"),
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
            ("r / x / u", "restart / stop / start its training container (the same way)"),
            ("D / E", "drain it in Slurm (reason asked, prefilled from the worst alert) / resume"),
            ("O / N", "cordon / uncordon it in Kubernetes"),
            ("K", "TERM the process picked in the processes pane (tab to it, j / k), else asks "
             "its PID; KILL after a second confirmation"),
            ("v", "charts of the GPU in focus (the first GPU otherwise)"),
            ("H", "its last 7 days from Prometheus ([prometheus] url or --history-from)"),
        ),
    ),
    (
        "Charts",
        (
            ("w  1 / 2 / 3", "next window / 5 min, 30 min, 2 h"),
            ("4 / 5 / 6", "6 h, 24 h, 7 d, the past from Prometheus (with a history source)"),
            ("] / [  n / p", "next / previous GPU"),
            ("o", "every GPU's temperature on one chart, or back to one GPU"),
            ("escape", "back"),
        ),
    ),
)


KEY_W = 20  # the key column; descriptions wrap under their own column (a hanging indent)


def help_sections() -> list[tuple[str, list[tuple[str, str]]]]:
    """The help as sections of (key, what it does) rows."""
    sections = [(title, list(keys)) for title, keys in KEYS_HELP]
    sections.append(
        (
            "Filter (/): terms that must all hold",
            [
                ("KEY OP VALUE", "op: > < >= <= = !=; a GPU key holds if any GPU does; n/a never matches"),
                ("text", "part of the node's name, status or reason"),
                ("keys", ", ".join(KEYS)),
            ],
        )
    )
    sections.append(("Commands (:)", [(usage, what) for usage, what in COMMANDS.values()]))
    return sections


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]
    DEFAULT_CSS = f"""
    HelpScreen {{
        align: center middle;
    }}
    HelpScreen > VerticalScroll {{
        width: 100%;
        max-width: 140;
        height: auto;
        max-height: 100%;
        margin: 0 2;
        border: round $border;
        border-title-color: $text;
        background: $surface;
        padding: 0 1;
    }}
    HelpScreen Grid {{
        grid-size: 2;
        grid-columns: {KEY_W + 2} 1fr;
        grid-rows: auto;
        height: auto;
    }}
    HelpScreen .key {{ padding-left: 2; text-style: bold; color: $text-accent; }}
    HelpScreen .section {{ text-style: bold; color: $text-primary; padding-top: 1; }}
    HelpScreen .section.-first {{ padding-top: 0; }}
    """

    def compose(self) -> ComposeResult:
        box = VerticalScroll()
        box.border_title = "dltui keys · escape closes"
        with box:
            for i, (title, rows) in enumerate(help_sections()):
                yield Static(Content(title), classes="section -first" if i == 0 else "section")
                with Grid():
                    for key, what in rows:
                        yield Static(Content(key), classes="key")
                        yield Static(Content(what))

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)


def help_content() -> Content:
    """The help as one text (what the screen shows, without its columns)."""
    lines: list[Content] = []
    for title, rows in help_sections():
        lines.append(Content.styled(title, "bold"))
        lines += [Content(f"  {key:<{KEY_W}}{what}") for key, what in rows]
    return Content("\n").join(lines)
