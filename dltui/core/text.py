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

# What is made visible: C0 controls, DEL, C1 controls, the bidi embeddings, overrides and
# isolates, lone surrogates.
_UNSAFE_RANGES = ((0x00, 0x1F), (0x7F, 0x9F), (0x202A, 0x202E), (0x2066, 0x2069), (0xD800, 0xDFFF))


def _visible(code: int) -> str:
    if code == 0x09:
        return " "  # a tab is only spacing
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ␀ … ␛ … ␟
    if code == 0x7F:
        return "\u2421"  # ␡
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


# One table for str.translate: the rewrite is a single C call, however many there are.
_TABLE = {code: _visible(code) for low, high in _UNSAFE_RANGES for code in range(low, high + 1)}


def clean(text: str) -> str:
    """``text`` with every control, bidi override and lone surrogate made visible; the same
    object when there is none (almost always: one C call decides)."""
    if text.isprintable():
        return text
    return text.translate(_TABLE)


def clean_value(value: Any) -> Any:
    """A decoded JSON value with every string in it cleaned (dict keys included), lists and
    dicts copied; anything else as it is."""
    kind = type(value)
    if kind is str:
        return value if value.isprintable() else value.translate(_TABLE)
    if kind is list:
        return [clean_value(v) for v in value]
    if kind is dict:
        return {clean_value(k): clean_value(v) for k, v in value.items()}
    return value


# The JSON escapes of the characters ``clean`` changes: \b \f \n \r \t, \u0000-\u001f,
# \u007f-\u009f (and a few harmless \u007x), the bidi overrides, the surrogates.
_ESCAPED = r"\\(?:[bfnrt]|u(?:00[0-1]|00[7-9]|20(?:2[a-e]|6[6-9])|d[89a-f]))"
_ESCAPED_STR = re.compile(_ESCAPED, re.IGNORECASE)
_ESCAPED_BYTES = re.compile(_ESCAPED.encode(), re.IGNORECASE)


def json_may_need_cleaning(text: str | bytes) -> bool:
    """False when no string decoded from the JSON ``text`` can need ``clean``: then decoding
    it need not clean at all. A few C-speed scans: an ASCII text (every probe line: the probe
    writes ASCII JSON) needs cleaning only if it holds DEL or one of those escapes; anything
    beyond ASCII (a raw C1 control or bidi override may be there) answers True, and is cleaned."""
    if not text.isascii():
        return True
    if isinstance(text, bytes):
        return b"\x7f" in text or (b"\\" in text and _ESCAPED_BYTES.search(text) is not None)
    return "\x7f" in text or ("\\" in text and _ESCAPED_STR.search(text) is not None)
