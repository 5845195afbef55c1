"""What a hostile node sends (notes on the threat model: SECURITY.md), and how a test checks
that none of it survived as a terminal command."""

from __future__ import annotations

import re
from dataclasses import fields, is_dataclass

# A process name any user on a node can set (exec -a): OSC 0 retitles the window, BEL ends it,
# CSI 2J clears the screen, markup that would be a live link or close a tag, HTML for the
# report, and a right-to-left override that reverses what follows it.
HOSTILE = (
    "python3 \x1b]0;PWNED\x07\x1b[2J[@click=app.quit]x[/]<script>alert(1)</script>"
    "\u202egnp.exe\u202c\x9b31m\ud800"
)
# The same as a node's tools print it: UTF-8 text, where a lone surrogate cannot be.
HOSTILE_PRINTED = HOSTILE.replace("\ud800", "")
# What the sanitiser must leave of none of it: C0/C1 controls, DEL, bidi overrides, surrogates.
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def strings_in(obj, seen=None):
    """Every string reachable from ``obj``: dataclasses, dicts (keys too), lists, tuples."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, str):
        yield obj
    elif is_dataclass(obj) and not isinstance(obj, type):
        for f in fields(obj):
            yield from strings_in(getattr(obj, f.name), seen)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from strings_in(key, seen)
            yield from strings_in(value, seen)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for item in obj:
            yield from strings_in(item, seen)


def unsafe_strings(obj) -> list[str]:
    """The strings in ``obj`` that still hold a control, a bidi override or a surrogate."""
    return [s for s in strings_in(obj) if UNSAFE.search(s)]
