"""The confirm dialog of an action: which node(s), and the exact remote command line each will
run, before anything is sent. ``y`` confirms; ``n`` or Escape cancels."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from ..plain import plain


class ConfirmScreen(ModalScreen[bool]):
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: auto;
        max-width: 90%;
        height: auto;
        max-height: 80%;
        border: thick $error 60%;
        background: $panel;
        padding: 1 2;
    }
    ConfirmScreen #confirm-title { text-style: bold; color: $text-error; margin-bottom: 1; }
    ConfirmScreen #confirm-body { width: auto; height: auto; text-wrap: nowrap; text-overflow: ellipsis; }
    ConfirmScreen Label { width: auto; }
    ConfirmScreen #confirm-keys { margin-top: 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("y", "answer(True)", "Yes, run it"),
        Binding("n,escape", "answer(False)", "Cancel"),
    ]

    def __init__(self, title: str, lines: list[tuple[str, str]], note: str = "") -> None:
        """``lines``: (node, the exact command line it will run) per node."""
        super().__init__()
        self.title_text = title
        self.lines = lines
        self.note = note

    def compose(self) -> ComposeResult:
        width = max((len(node) for node, _ in self.lines), default=4)
        body = [
            Content.assemble((node.ljust(width), "bold"), "  $ ", (line, "$text-accent"))
            for node, line in self.lines
        ]
        if self.note:
            body.append(Content.styled("\n" + self.note, "$text-warning"))
        with Vertical():
            yield Label(plain(self.title_text), id="confirm-title")
            yield Static(Content("\n").join(body), id="confirm-body")
            yield Label("y  run it on these nodes      n / Esc  cancel", id="confirm-keys")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
