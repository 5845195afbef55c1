"""Property-based tests of what reads hostile input: no input raises anything but the documented
error, and no text that comes out holds a control character, a bidi override or a surrogate.

Seeded (``derandomize=True``) with a small budget, so ``make test`` is quick and repeatable;
``HYPOTHESIS_EXAMPLES=5000 pytest tests/unit/test_fuzz.py`` searches harder.
"""

from __future__ import annotations

import json
import os
import string
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dltui.actions import names
from dltui.actions.commands import Identity
from dltui.core.text import clean, clean_value, json_may_need_cleaning
from dltui.node.schema import PROTOCOL, RECORD_FIELDS
from dltui.node.wire import Encoder
from dltui.transport.protocol import ProbeReader, ProtocolError
from dltui.transport.recording.format import parse_line
from dltui.transport.recording.replay import ReplayError, ReplayTransport
from tests.hostile import HOSTILE, UNSAFE, unsafe_strings
from tests.unit.test_wire import collected

fuzz = settings(
    derandomize=True,
    max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", "60")),
    deadline=None,  # a shared, noisy machine: no timing
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)

# Text biased towards what attacks are made of: controls, ESC, bidi, surrogates, markup, HTML.
NASTY = "\x00\x07\x08\t\n\r\x1b\x7f\x85\x9b\u061c\u200e\u202a\u202e\u2066\u2069\ud800\udfff[]/@=$<>&\\\"' "
texts = st.text(alphabet=st.sampled_from(NASTY) | st.characters(), max_size=60) | st.sampled_from(
    [HOSTILE, "[/]", "[@click=app.quit]x[/]", "\x1b]0;PWNED\x07", ""]
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=20,
)


# --- the sanitiser ------------------------------------------------------------------------


@fuzz
@given(texts)
def test_clean_leaves_nothing_unsafe_writes_as_utf_8_and_is_stable(text):
    out = clean(text)
    assert not UNSAFE.search(out)
    out.encode("utf-8")  # no lone surrogate left to stop a write
    assert clean(out) == out
    if text.isprintable():
        assert out is text


@fuzz
@given(json_values)
def test_clean_value_leaves_no_unsafe_string_anywhere(value):
    assert unsafe_strings(clean_value(value)) == []


@fuzz
@given(texts, st.booleans())
def test_the_json_text_check_never_misses_a_string_that_needs_cleaning(text, ascii_only):
    if clean(text) != text:
        assert json_may_need_cleaning(json.dumps({"label": text}, ensure_ascii=ascii_only))


# --- the probe line decoder ---------------------------------------------------------------


class Calls:
    """A sink keeping what it is given."""

    def __init__(self):
        self.got = []

    def on_status(self, name, status, reason=None):
        self.got.append((status, reason))

    def on_hello(self, name, facts, interval_s=None):
        self.got.append((facts, interval_s))

    def on_sample(self, name, sample):
        self.got.append(sample)

    def on_event(self, name, event):
        self.got.append(event)


HELLO = json.dumps({"type": "hello", "protocol": PROTOCOL, "time": 1.0, "facts": {"hostname": "n"}})


def _mutated_sample(draw_value, kind_index, field_index):
    """A real sample line with one field of one record replaced."""
    line = Encoder().encode(collected(2.0))
    kind = sorted(RECORD_FIELDS)[kind_index % len(RECORD_FIELDS)]
    key = kind if kind in ("cpu", "memory", "pressure", "tasks", "checkpoint") else f"{kind}/0"
    line["r"].setdefault(key, {})[str(field_index % len(RECORD_FIELDS[kind]))] = draw_value
    return json.dumps(line)


probe_lines = (
    texts
    | json_values.map(json.dumps)
    | st.builds(_mutated_sample, json_values, st.integers(0, 50), st.integers(0, 80))
    | st.dictionaries(st.sampled_from(["type", "time", "r", "key", "gone", "facts", "message"]),
                      json_values).map(lambda d: json.dumps({"type": "sample", **d}))
)


@fuzz
@given(st.lists(probe_lines, min_size=1, max_size=5))
def test_the_probe_reader_counts_bad_lines_and_delivers_only_clean_text(lines):
    sink = Calls()
    reader = ProbeReader("n", sink)
    reader.feed(HELLO)
    for line in lines:
        try:
            reader.feed(line)
        except ProtocolError:  # the one documented error: a hello of another protocol
            pass
    assert unsafe_strings(sink.got) == []


# --- recordings ---------------------------------------------------------------------------

recording_lines = (
    texts.map(lambda t: t.encode("utf-8", "surrogatepass"))
    | json_values.map(lambda v: json.dumps(v).encode())
    | st.fixed_dictionaries(
        {"t": st.floats(allow_nan=True) | st.integers() | texts, "node": texts,
         "kind": st.sampled_from(["sample", "status", "hello", "event", "x"])},
        optional={"sample": json_values, "status": json_values, "reason": json_values,
                  "facts": json_values, "event": json_values, "interval_s": json_values},
    ).map(lambda d: json.dumps(d).encode())
)
READ_ERRORS = (ValueError, KeyError, TypeError, AttributeError, RecursionError)  # parse_line's


@fuzz
@given(recording_lines)
def test_a_recorded_line_is_read_clean_or_refused_with_a_documented_error(line):
    try:
        _, _, args = parse_line(line)
    except READ_ERRORS:
        return
    assert unsafe_strings(args) == []


@fuzz
@given(st.binary(max_size=200) | json_values.map(lambda v: json.dumps(v).encode()))
def test_a_file_that_is_not_a_recording_is_refused_with_replay_error_only(first_line):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "r.jsonl"
        path.write_bytes(first_line + b"\n")
        try:
            replay = ReplayTransport(path)
        except ReplayError:
            return
        assert unsafe_strings(replay.names) == []


# --- what the operator names --------------------------------------------------------------

SHELL_SPECIAL = set(string.whitespace) | set(";&|$`'\"<>()*?[]{}!#~/")


@fuzz
@given(texts | st.from_regex(r"[A-Za-z0-9:_.\-@\\x]{1,40}(\.service|\.timer)?", fullmatch=True))
def test_a_unit_name_is_a_systemd_name_or_invalid_name(text):
    try:
        name = names.unit_name(text)
    except names.InvalidName:
        return
    assert not name.startswith("-") and not SHELL_SPECIAL.intersection(name.replace("\\x", ""))
    assert name.isprintable() and len(name.encode()) <= names.UNIT_NAME_MAX
    assert names.unit_name(name) == name


@fuzz
@given(texts | st.integers().map(str) | st.integers())
def test_a_pid_is_a_plain_number_in_range_or_invalid_name(value):
    try:
        pid = names.pid(value)
    except names.InvalidName:
        return
    assert 2 <= pid <= names.PID_MAX and str(pid) == str(value)


@fuzz
@given(st.lists(texts, max_size=5).map("\n".join))
def test_who_we_are_on_a_node_is_believed_only_when_printable(text):
    try:
        who = Identity.parse(text)
    except ValueError:
        return
    assert all(x is None or x.isprintable() for x in (who.user, who.systemctl, who.kill))
