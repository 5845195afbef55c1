"""Text from a node, a recording or a Prometheus answer made safe to show: the one sanitiser.

Any user on a node shapes process names, journal lines and unit states; any scraped target
shapes Prometheus labels. Such a string may hold bytes meant for the operator's terminal (ESC
sequences that retitle the window or clear the screen, BEL, 8-bit C1 controls), bidi overrides
that reorder what the eye reads, or lone surrogates that stop a UTF-8 write. ``clean`` makes
every one of them visible instead (``␛`` for ESC, ``␊`` for a newline, ``\\u202e`` for a bidi
override) and keeps everything else, so the data stays readable and nothing reaches the
terminal as a command. Markup (``[b]``, ``[@click=…]``) is left as it is: it is plain text
here, and the UI renders node text as text, never as markup (``dltui.ui.plain``).

It is applied once, where such strings become model objects (the probe line decoder, the
recording reader, the Prometheus client, the actions' and the burn-in's parsed answers), so
everything downstream (screens, CLI lines, the text snapshot, the HTML report) already holds
the safe form.
"""

from __future__ import annotations

import re
from typing import Any

# C0 controls, DEL, C1 controls, the bidi embeddings/overrides/isolates, lone surrogates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _visible(char: str) -> str:
    code = ord(char)
    if code == 0x09:
        return " "  # a tab is only spacing
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ␀ … ␛ … ␟
    if code == 0x7F:
        return "\u2421"  # ␡
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


_VISIBLE = {chr(c): _visible(chr(c)) for c in range(0x00, 0xA0)}


def _replace(match: re.Match[str]) -> str:
    char = match.group()
    return _VISIBLE.get(char) or _visible(char)


def clean(text: str) -> str:
    """``text`` with every control, bidi override and lone surrogate made visible; the same
    object when there is none (almost always: one C call decides)."""
    if text.isprintable():
        return text
    return _UNSAFE.sub(_replace, text)


def clean_value(value: Any) -> Any:
    """A decoded JSON value with every string in it cleaned (dict keys included), lists and
    dicts copied; anything else as it is."""
    kind = type(value)
    if kind is str:
        return value if value.isprintable() else _UNSAFE.sub(_replace, value)
    if kind is list:
        return [clean_value(v) for v in value]
    if kind is dict:
        return {clean_value(k): clean_value(v) for k, v in value.items()}
    return value


# What an answer's JSON text spells for a character ``clean`` changes, escaped or raw: JSON
# escapes below U+0020 (\n, \u001b...), \u escapes of DEL, C1, bidi and surrogates, and the
# raw characters themselves. A text without any holds no string that needs cleaning.
_UNSAFE_IN_JSON = re.compile(
    r'\\[bfnrt]|\\u00[0-1][0-9a-fA-F]|\\u00[7-9][0-9a-fA-F]|\\u20(?:2[a-eA-E]|6[6-9])'
    r'|\\u[dD][89a-fA-F]'
    "|[\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)


def json_may_need_cleaning(text: str) -> bool:
    """False when no string decoded from the JSON ``text`` can need ``clean`` (one regex pass
    over the raw text: a large answer is walked only when it may hold something to clean).
    A few harmless escapes (``\\u0078``) also answer True; they only cost the walk."""
    return _UNSAFE_IN_JSON.search(text) is not None
