"""Textual's footer with ``q`` and ``?`` first.

Textual lists the focused widget's and the screen's keys before the app's, so at 80 columns
the screen's keys filled the line and Quit and Help, the two a newcomer looks for, were cut.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

FIRST = ("quit", "help")  # the app's actions, in this order


class DltuiFooter(Footer):
    def compose(self) -> ComposeResult:
        keys = list(super().compose())  # FooterKeys (this app binds no key groups)

        def rank(widget) -> int:
            action = widget.action if isinstance(widget, FooterKey) else None
            return FIRST.index(action) if action in FIRST else len(FIRST)

        yield from sorted(keys, key=rank)  # stable: the rest keep Textual's order
