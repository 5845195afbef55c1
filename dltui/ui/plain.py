"""Text on screen as text: node strings (and messages quoting them) never read as markup.

Textual reads a ``str`` given to ``Static``/``Label``/``update``, to ``border_title``, to
``notify`` and to the command palette as content markup. From a node that is an attack, not a
style: a GPU model holding ``[/]`` raises MarkupError when its pane draws, ``[@click=app.quit]``
becomes a live link, and an operator's own ``[actions]`` vanishes from a notice. Node strings
arrive cleaned of control characters (``dltui.core.text``); here they are kept from being parsed:

- ``plain(text)``: a ``Content`` of exactly that text, for ``Static``, ``Label``, ``update``
  and ``border_title``;
- ``escape(text)``: for the places that take only a markup string (the command palette's
  titles and help): the same text, every ``[`` escaped.

``DltuiApp.notify`` never reads markup, so ``self.notify(...)`` anywhere in the app is safe.
``Content(...)``, ``Content.styled``, ``Content.assemble`` and Rich ``Text(...)`` are plain
already; ``Content.from_markup``, ``Text.from_markup`` and a bare ``str`` are not.
"""

from __future__ import annotations

from textual.content import Content


def plain(text: object) -> Content:
    """``text`` (``str()`` of anything) shown as it is; never parsed as markup."""
    return Content(str(text))


def escape(text: str) -> str:
    """Markup that shows ``text`` as it is. Textual's markup knows one escape, ``\\[``: a
    bracket behind a backslash opens no tag (``textual.markup.escape`` is Rich's, and lets
    ``[B]`` and ``[$x]`` through). Use it on whole strings: a text ending in a backslash
    would escape a tag written right after it."""
    return text.replace("[", "\\[")
