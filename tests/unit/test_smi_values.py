"""nvidia-smi cell values -> Python values. The inputs are spellings found in real captures
(CSV cells, ``-q -x`` text, the ``-q`` and table outputs) unless a comment says otherwise."""

import pytest

from dltui.node.probe import values


@pytest.mark.parametrize(
    "raw",
    [
        "[N/A]",
        "N/A",
        "[Not Supported]",
        "ERR!",
        "Unknown Error",
        "[Requested functionality has been deprecated]",
        "Requested functionality has been deprecated",  # bare, as -q -x prints it
        "[Function Not Found]",
        "",
        "   ",
        None,
    ],
)
def test_not_a_value_is_none_for_every_parser(raw):
    assert values.text(raw) is None
    assert values.number(raw) is None
    assert values.flag(raw) is None
    assert values.hex_mask(raw) is None
    assert values.pstate(raw) is None
    assert values.watts(raw) is None


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("631.95 W", 631.95),
        ("631.95", 631.95),
        ("81559 MiB", 81559),
        ("100 %", 100),
        ("1980 MHz", 1980),
        ("0 us", 0),
        ("834002687 us", 834002687),
        ("36 C", 36),
        ("-7 C", -7),
        ("16x", 16),
        ("192 bank(s)", 192),
        ("1066699 KB/s", 1066699),
        ("59", 59),
    ],
)
def test_numbers_lose_their_unit(raw, expected):
    value = values.number(raw)
    assert value == expected
    assert type(value) is type(expected)


def test_text_that_is_not_a_number_is_none():
    assert values.number("Default") is None
    assert values.number("0x00000000000001FF") is None
    assert values.number("2025/03/19 06:53:55.516") is None


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("Enabled", True),
        ("Disabled", False),
        ("Yes", True),
        ("No", False),
        ("Active", True),
        ("Not Active", False),
        ("Supported", None),
        ("None", None),
    ],
)
def test_flags(raw, expected):
    assert values.flag(raw) is expected


def test_hex_masks():
    assert values.hex_mask("0x00000000000001FF") == 0x1FF
    assert values.hex_mask("0x0000000000000001") == 1
    assert values.hex_mask("0x0000000000000000") == 0
    assert values.hex_mask("511") is None  # typed: decimal is not a mask


def test_pstates():
    assert values.pstate("P0") == 0
    assert values.pstate("P8") == 8
    assert values.pstate("P2") == 2
    assert values.pstate("Default") is None  # typed: not a P-state


def test_watts_keep_one_decimal():
    assert values.watts("631.95 W") == 632.0
    assert values.watts("110.23 W") == 110.2
    assert values.watts("700.00 W") == 700.0


def test_text_is_stripped_and_keeps_words_like_none():
    assert values.text(" NVIDIA H100 80GB HBM3 ") == "NVIDIA H100 80GB HBM3"
    assert values.text("None") == "None"  # gpu_recovery_action "None" is a value
