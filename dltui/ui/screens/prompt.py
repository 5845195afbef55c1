"""The one-line prompt for ``/`` (filter, applied as you type) and ``:`` (commands)."""

from __future__ import annotations

from collections.abc import Callable

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from ..plain import plain


class PromptScreen(ModalScreen[str | None]):
    """Returns the text on Enter, None on Escape. ``check`` says what is wrong with a text."""

    DEFAULT_CSS = """
    PromptScreen {
        align: left bottom;
        background: $background 0%;  /* the screen under it stays visible and live */
    }
    PromptScreen > Vertical {
        dock: bottom;
        height: auto;
        background: $panel;
    }
    PromptScreen Horizontal {
        height: 1;
    }
    PromptScreen Label#prefix {
        width: auto;  /* ":" and "burn-in? " alike (a fixed 2 cut the longer ones to a letter) */
        padding: 0 0 0 1;
        color: $text-accent;
        text-style: bold;
    }
    PromptScreen Input, PromptScreen Input:focus {
        border: none;
        height: 1;
        padding: 0;
        width: 1fr;
        background: $panel;
    }
    PromptScreen Label#problem {
        display: none;
        width: 1fr;
        padding: 0 1;
        color: $text-error;
    }
    PromptScreen Label#problem.-shown {
        display: block;
    }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        prefix: str,
        value: str = "",
        *,
        placeholder: str = "",
        check: Callable[[str], str | None] | None = None,
        on_change: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        self.prefix = prefix
        self.value = value
        self.placeholder = placeholder
        self.check = check
        self.on_change = on_change

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("", id="problem")
            with Horizontal():
                yield Label(plain(self.prefix), id="prefix")
                yield Input(self.value, placeholder=self.placeholder, select_on_focus=False)

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        problem = self.check(event.value) if self.check else None
        label = self.query_one("#problem", Label)
        label.update(plain(problem or ""))
        label.set_class(bool(problem), "-shown")
        if problem is None and self.on_change is not None:
            self.on_change(event.value)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        if self.check is None or self.check(event.value) is None:
            self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)

    async def on_key(self, event: events.Key) -> None:
        """Keys typed in one burst with the key that opened the prompt (a paste, a macro,
        ``/temp>80⏎``) reach this screen before its input has the focus: they go into the
        input, in order, instead of being lost. (That key's binding is a priority one, so the
        prompt is on the screen stack before the next key of the burst is read.)"""
        field = self.query_one(Input)
        if self.focused is field:
            return
        if event.key == "enter":
            event.stop()
            field.focus()
            await field.action_submit()
        elif event.key == "backspace":
            event.stop()
            field.action_delete_left()
        elif event.is_printable and event.character is not None:
            event.stop()
            field.focus()
            field.insert_text_at_cursor(event.character)
