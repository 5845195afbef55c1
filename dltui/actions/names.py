"""Validation of what an operator names: a systemd unit, a process id, a journal line count.

Everything an action sends is built from values that passed these checks, then quoted; a
refusal happens before anything reaches a node.
"""

from __future__ import annotations

import re

from dltui.config import CommandLine
from dltui.config_schema import keys

# systemd's unit-name grammar (src/basic/unit-name.c): a prefix of [A-Za-z0-9:_.-] and
# "\xNN" escapes, an optional "@instance" (same characters), then ".<type>". 255 bytes at
# most. A leading "-" (the root mount's "-.mount") would read as an option: refused here.
UNIT_TYPES = (
    "service",
    "socket",
    "target",
    "timer",
    "mount",
    "automount",
    "swap",
    "path",
    "slice",
    "scope",
    "device",
)
UNIT_NAME_MAX = 255
_PART = r"(?:[A-Za-z0-9:_.\-]|\\x[0-9a-fA-F]{2})+"
_UNIT_RE = re.compile(rf"({_PART})(?:@({_PART}))?\.({'|'.join(UNIT_TYPES)})")
PID_MAX = 4194304  # the kernel's PID_MAX_LIMIT on 64-bit
# a tail to read, not a journal to copy: the range of `unit logs --lines`, declared once
JOURNAL_LINES_MAX = int(next(k.max for k in keys(CommandLine) if k.attr == "lines") or 0)


class InvalidName(ValueError):
    """A unit name or PID refused before anything is sent; the message says why."""


def unit_name(text: str) -> str:
    """The unit's full name, or ``InvalidName``. A name without a type gets ``.service``, as
    systemctl itself would read it."""
    if not isinstance(text, str) or not text:
        raise InvalidName("empty unit name")
    if text.startswith("-"):
        raise InvalidName(f"{text!r} looks like an option, not a unit name")
    if " " in text or not text.isprintable():  # controls, and argv's undecodable bytes
        raise InvalidName(f"{text!r}: unit names have no spaces or control characters")
    if "/" in text:
        raise InvalidName(f"{text!r}: unit names have no '/' (give the unit, not a path)")
    name = text
    if not any(text.endswith("." + t) for t in UNIT_TYPES):
        name = text + ".service"
    if len(name.encode()) > UNIT_NAME_MAX:
        raise InvalidName(f"unit name longer than {UNIT_NAME_MAX} bytes")
    m = _UNIT_RE.fullmatch(name)
    if m is None:
        raise InvalidName(
            f"{text!r} is not a systemd unit name (letters, digits, ':', '_', '.', '-', '\\xNN', "
            "one '@instance', a type such as .service)"
        )
    if name.count("@") == 1 and not m.group(2):
        raise InvalidName(
            f"{text!r} is a template; name an instance (e.g. {m.group(1)}@1.{m.group(3)})"
        )
    return name


def pid(value: str | int) -> int:
    """A process id as an int, or ``InvalidName`` (digits only, 2..PID_MAX; never PID 1)."""
    text = str(value)
    if not re.fullmatch(r"[0-9]{1,7}", text) or text.startswith("0"):
        raise InvalidName(f"{text!r} is not a process id (digits only)")
    number = int(text)
    if number == 1:
        raise InvalidName("PID 1 is the node's init: refused")
    if number > PID_MAX:
        raise InvalidName(f"{number} is above the largest possible PID")
    return number


def journal_lines(value: int) -> int:
    """A count of journal lines to read, or ``InvalidName`` (1..JOURNAL_LINES_MAX)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= JOURNAL_LINES_MAX:
        raise InvalidName(f"{value!r} journal lines: give 1 to {JOURNAL_LINES_MAX}")
    return value


# Docker's own rule for a container name ([a-zA-Z0-9][a-zA-Z0-9_.-]+), and a label selector
# label=KEY or label=KEY=VALUE with the characters labels use: never an option, never a space.
_CONTAINER_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_LABEL_RE = re.compile(r"label=[A-Za-z0-9][A-Za-z0-9_./-]{0,127}(?:=[A-Za-z0-9_./:@+-]{0,255})?")


def container_name(text: str) -> str:
    """A container's name (what docker restart / stop / start may be given)."""
    if not isinstance(text, str) or not _CONTAINER_RE.fullmatch(text):
        raise InvalidName(f"{text!r} is not a container name (letters, digits, '_', '.', '-'; a letter or digit first)")
    return text


def container_ref(text: str) -> str:
    """A configured training container: a name, or a label selector ``label=KEY[=VALUE]``."""
    if isinstance(text, str) and text.startswith("label="):
        if not _LABEL_RE.fullmatch(text):
            raise InvalidName(f"{text!r} is not a label selector (label=KEY or label=KEY=VALUE)")
        return text
    return container_name(text)
