"""Single values as nvidia-smi prints them (CSV cells, ``-q -x`` element text), made typed.

nvidia-smi says "no value" in many ways: ``[N/A]``, bare ``N/A``, ``[Not Supported]``,
``ERR!``, ``Unknown Error``, ``[Requested functionality has been deprecated]`` (bare in XML),
any other bracketed error text, or nothing at all. Every one of them becomes ``None``: a value
the hardware does not report is never 0. Numbers may carry their unit (``631.95 W``,
``81559 MiB``, ``100 %``, ``1980 MHz``, ``0 us``, ``36 C``, ``16x``, ``192 bank(s)``).
"""

from __future__ import annotations

import re

_NOT_A_VALUE = {
    "",
    "n/a",
    "err!",
    "unknown error",
    "not supported",
    "requested functionality has been deprecated",
}

# A number, then an optional unit glued on or after one space: "16x", "0 us", "1066699 KB/s".
_NUMBER = re.compile(r"^([-+]?\d+(?:\.\d+)?)\s?([A-Za-z%/()]*)$")
_PSTATE = re.compile(r"^P(\d{1,2})$")

_TRUE = {"enabled", "yes", "active", "on"}
_FALSE = {"disabled", "no", "not active", "off"}


def text(raw: str | None) -> str | None:
    """The cell as a string, or None when it says there is no value."""
    if raw is None:
        return None
    value = raw.strip()
    if value.startswith("[") and value.endswith("]"):
        return None
    if value.lower() in _NOT_A_VALUE:
        return None
    return value


def number(raw: str | None) -> int | float | None:
    """``"631.95 W"`` -> 631.95, ``"81559 MiB"`` -> 81559, ``"16x"`` -> 16; int unless the text
    has decimals. None for not-a-value and for anything that is not a number."""
    value = text(raw)
    if value is None:
        return None
    match = _NUMBER.match(value)
    if match is None:
        return None
    digits = match.group(1)
    return float(digits) if "." in digits else int(digits)


def flag(raw: str | None) -> bool | None:
    """``Enabled``/``Yes``/``Active``/``On`` -> True, their opposites -> False, else None."""
    value = text(raw)
    if value is None:
        return None
    word = value.lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    return None


def hex_mask(raw: str | None) -> int | None:
    """``"0x00000000000001FF"`` -> 511; None for anything else."""
    value = text(raw)
    if value is None or not value.lower().startswith("0x"):
        return None
    try:
        return int(value, 16)
    except ValueError:
        return None


def pstate(raw: str | None) -> int | None:
    """``"P0"`` -> 0, ``"P8"`` -> 8; None for anything else."""
    value = text(raw)
    match = _PSTATE.match(value) if value is not None else None
    return int(match.group(1)) if match else None


def watts(raw: str | None) -> float | None:
    """Power in W, rounded to 0.1 W (the sensor is ±5 W; more digits only cost bytes)."""
    value = number(raw)
    return None if value is None else round(float(value), 1)
