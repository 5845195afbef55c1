"""Node text is data: the sanitiser, and every boundary where a node's (a recording's, a
Prometheus target's) strings become model objects applies it."""

import copy
import gzip
import json

import pytest

from dltui.actions.commands import Identity
from dltui.actions.policy import ActionResult
from dltui.actions.service import journal_line
from dltui.burnin.remote import Answer
from dltui.burnin.verdict import FAIL, Item
from dltui.core.models import GpuProcess
from dltui.core.state import FleetState
from dltui.core.text import clean, clean_value, json_may_need_cleaning
from dltui.node.schema import PROTOCOL, RECORD_FIELDS
from dltui.node.wire import Decoder, Encoder
from dltui.transport.command import CommandResult
from dltui.transport.prometheus.client import _decode
from dltui.transport.protocol import ProbeReader
from dltui.transport.ssh.errors import Failure
from tests.hostile import HOSTILE, unsafe_strings
from tests.unit.test_wire import collected


def test_controls_escapes_bidi_and_surrogates_become_visible_and_the_rest_stays():
    assert clean(HOSTILE) == (
        "python3 ␛]0;PWNED␇␛[2J[@click=app.quit]x[/]<script>alert(1)</script>"
        "\\u202egnp.exe\\u202c\\x9b31m\\ud800"
    )
    assert clean("a\tb\nc\r\x00\x7f") == "a b␊c␍␀␡"
    assert clean("\u2066x\u2069") == "\\u2066x\\u2069"


def test_printable_text_is_returned_as_it_is_markup_and_unicode_included():
    for text in ("NVIDIA H100 80GB HBM3", "[b]bold[/b] [@click=app.quit]", "Grüße 温度 🔥", ""):
        assert clean(text) is text
    assert clean("a\u00a0b") == "a\u00a0b"  # not printable to Python, harmless to a terminal


def test_what_clean_returns_always_encodes_as_utf_8():
    assert clean("\udcff\ud83d").encode("utf-8") == b"\\udcff\\ud83d"


def test_clean_value_cleans_strings_in_lists_and_dicts_keys_included_and_keeps_the_rest():
    value = {HOSTILE: [HOSTILE, 1, None, {"k": HOSTILE}], "n": 2.5, "b": True}
    cleaned = clean_value(value)
    assert unsafe_strings(cleaned) == []
    assert cleaned[clean(HOSTILE)] == [clean(HOSTILE), 1, None, {"k": clean(HOSTILE)}]
    assert cleaned["n"] == 2.5 and cleaned["b"] is True


def test_a_json_text_is_flagged_when_a_string_in_it_may_need_cleaning():
    assert json_may_need_cleaning(json.dumps({"x": HOSTILE}))
    assert json_may_need_cleaning(json.dumps({"x": "\u202e"}, ensure_ascii=False))
    assert json_may_need_cleaning(json.dumps({"x": "\x9b"}, ensure_ascii=False))
    assert not json_may_need_cleaning(json.dumps({"model": "NVIDIA H100 80GB HBM3", "t": [1.5, "2"]}))
    assert not json_may_need_cleaning(json.dumps({"model": "NVIDIA H100"}).encode())
    for char in map(chr, range(0x0, 0x3000)):  # never a miss, whatever json.dumps escapes
        if clean(char) != char:
            for text in (json.dumps(char), json.dumps(char, ensure_ascii=False)):
                assert json_may_need_cleaning(text), hex(ord(char))
                assert json_may_need_cleaning(text.encode("utf-8", "surrogatepass")), hex(ord(char))


# --- the probe's lines ---------------------------------------------------------------------


def hello_line(**facts):
    return json.dumps({"type": "hello", "protocol": PROTOCOL, "time": 1.0, "interval_s": 1.0,
                       "facts": {"hostname": "gpu01", **facts}})


def test_every_field_of_every_record_kind_is_cleaned_as_it_is_decoded():
    """Generic over the field tables: a record kind or field added later is covered too."""
    shapes = (HOSTILE, [HOSTILE, [HOSTILE]], {HOSTILE: {"x": HOSTILE}})
    for shape in shapes:
        reader = ProbeReader("gpu01", FleetState(["gpu01"]))
        reader.decoder = Decoder()  # no type checks: they refuse text in a number (test_protocol)
        records = {
            (kind if kind in ("cpu", "memory", "pressure", "tasks", "checkpoint") else f"{kind}/x"): {
                str(pos): shape for pos in range(len(names))
            }
            for kind, names in RECORD_FIELDS.items()
        }
        reader.feed(json.dumps({"type": "sample", "time": 1.0, "key": 1, "r": records}))
        assert set(reader.decoder.records) == set(records)  # decoded, whatever the models made of it
        assert unsafe_strings(reader.decoder.records) == []


def test_a_hostile_gpu_process_and_unit_reach_the_fleet_state_cleaned():
    fleet = FleetState(["gpu01"], clock=lambda: 100.0)
    reader = ProbeReader("gpu01", fleet)
    reader.feed(hello_line(kernel=HOSTILE, gpus=[{"index": 0, "name": HOSTILE}]))
    sample = collected(2.0, disks=(HOSTILE,))
    sample["gpus"][0].update(name=HOSTILE, processes=[{"pid": 4242, "name": HOSTILE, "gpu_memory_mib": 1.0}])
    sample["units"] = [{"name": "dl_train.service", "sub_state": HOSTILE, "error": HOSTILE}]
    enc = Encoder()
    reader.feed(json.dumps(enc.encode(sample)))
    sample = copy.deepcopy(sample)
    sample["time"] = 3.0
    sample["gpus"][0]["processes"].append({"pid": 4243, "name": HOSTILE + "2"})  # a delta line
    reader.feed(json.dumps(enc.encode(sample)))
    reader.feed(json.dumps({"type": "event", "time": 2.0, "kind": HOSTILE, "message": HOSTILE}))
    reader.feed(json.dumps({"type": "error", "time": 2.0, "source": HOSTILE, "message": HOSTILE}))
    node = fleet.nodes["gpu01"]
    assert node.sample.gpus[0].processes[1] == GpuProcess(4243, clean(HOSTILE + "2"))
    assert node.sample.gpus[0].name == clean(HOSTILE)
    assert node.sample.units[0].sub_state == clean(HOSTILE)
    assert node.facts.kernel == clean(HOSTILE) and node.facts.gpus[0].name == clean(HOSTILE)
    assert [e.message for e in node.timeline] == [clean(HOSTILE), f"{clean(HOSTILE)}: {clean(HOSTILE)}"]
    assert unsafe_strings(node.sample) == unsafe_strings(node.facts) == unsafe_strings(node.timeline) == []


@pytest.mark.parametrize("line", [
    "[" * 100_000 + "]" * 100_000,  # json's RecursionError
    '{"type": "sample", "time": 1e300, "r": {}}',
    '{"type": "sample", "time": NaN, "r": {}}',
    '{"type": "sample", "time": "now", "r": {}}',
    json.dumps({"type": "event", "time": 1.0, "message": [[[[[[[[[[[[]]]]]]]]]]]] * 2}) + "\x1b",
])
def test_a_line_nested_thousands_deep_or_timed_out_of_range_is_counted_not_raised(line):
    fleet = FleetState(["gpu01"])
    reader = ProbeReader("gpu01", fleet)
    reader.feed(hello_line())
    reader.feed(line)
    assert reader.malformed == 1
    event = fleet.nodes["gpu01"].timeline[-1]
    assert event.kind == "malformed-line" and unsafe_strings(event) == []


# --- recordings ----------------------------------------------------------------------------


def recording(tmp_path, *lines, started=1_767_258_000.0, nodes=("gpu01",), gz=False):
    path = tmp_path / ("r.jsonl.gz" if gz else "r.jsonl")
    text = "\n".join(json.dumps(x) if not isinstance(x, str) else x
                     for x in ({"dltui_recording": 1, "started": started, "nodes": list(nodes)}, *lines))
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return path


async def test_a_hostile_recording_replays_cleaned_and_its_bad_lines_are_skipped(tmp_path):
    from tests.unit.test_record_replay import play, stop

    from dltui.transport.recording.replay import ReplayTransport

    t = 1_767_258_001.0
    path = recording(
        tmp_path,
        {"t": t, "node": HOSTILE, "kind": "status", "status": "unreachable", "reason": HOSTILE},
        {"t": t, "node": HOSTILE, "kind": "hello", "facts": {"hostname": HOSTILE, "gpus": [{"index": 0, "name": HOSTILE}]}},
        "[" * 100_000,
        {"t": 1e300, "node": HOSTILE, "kind": "event", "event": {"time": t, "kind": "x", "message": "late"}},
        {"t": t, "node": HOSTILE, "kind": "sample", "sample": {"time": 1e300}},
        {"t": t + 0.01, "node": HOSTILE, "kind": "sample",
         "sample": {"time": t, "gpus": [{"index": 0, "name": HOSTILE, "processes": [{"pid": 1, "name": HOSTILE}]}]}},
        {"t": t + 0.02, "node": HOSTILE, "kind": "event", "event": {"time": t, "kind": HOSTILE, "message": HOSTILE}},
        nodes=(HOSTILE,),
        started=t,
    )
    replay = ReplayTransport(path, speed=1.0)  # in real time: a line at 1e300 would hold it for ever
    assert replay.names == [clean(HOSTILE)]
    fleet = FleetState(replay.names, clock=replay.clock)
    await stop(await play(replay, fleet))
    assert replay.malformed == 3
    node = fleet.nodes[clean(HOSTILE)]
    assert node.sample.gpus[0].processes[0].name == clean(HOSTILE)
    assert node.reason == clean(HOSTILE)
    assert unsafe_strings(node.sample) == unsafe_strings(node.facts) == unsafe_strings(node.timeline) == []
    assert node.timeline[-1].message == "end of recording (4 lines, 3 unreadable)"


@pytest.mark.parametrize("started", [1e300, -5, float("nan")])
def test_a_recording_that_starts_at_no_date_is_refused(tmp_path, started):
    from dltui.transport.recording.replay import ReplayError, ReplayTransport

    with pytest.raises(ReplayError, match="is not a date"):
        ReplayTransport(recording(tmp_path, started=started))


# --- Prometheus ----------------------------------------------------------------------------


def test_prometheus_label_values_are_cleaned_and_a_clean_answer_is_left_alone():
    series = [{"metric": {"__name__": "DCGM_FI_DEV_GPU_TEMP", "modelName": HOSTILE, "Hostname": HOSTILE},
               "value": [1.0, "61"]},
              {"metric": {"__name__": "up", "instance": "gpu02:9100"}, "value": [1.0, "1"]}]
    body = {"status": "success", "data": {"resultType": "vector", "result": series}, "error": HOSTILE}
    answer = _decode(gzip.compress(json.dumps(body).encode()), "gzip")
    assert answer["data"]["result"][0]["metric"]["modelName"] == clean(HOSTILE)
    assert unsafe_strings(answer) == []
    plain = {"status": "success", "data": {"resultType": "vector", "result": series[1:]}}
    assert _decode(json.dumps(plain).encode(), None) == plain


# --- actions and the burn-in ---------------------------------------------------------------


def test_action_results_journal_lines_and_node_errors_show_the_clean_form():
    result = ActionResult("gpu01", "status x", "ok", HOSTILE, details=[HOSTILE])
    assert result.message == clean(HOSTILE) and result.details == [clean(HOSTILE)]
    assert journal_line({"MESSAGE": HOSTILE, "__REALTIME_TIMESTAMP": "0"}).endswith(clean(HOSTILE))
    as_bytes = list(HOSTILE.encode("utf-8", "surrogatepass"))  # journald's form for such a line
    assert unsafe_strings(journal_line({"MESSAGE": as_bytes})) == []
    assert CommandResult(("x",), 1, "", f"\n{HOSTILE}\n").first_error_line() == clean(HOSTILE)
    assert Failure("unreachable", HOSTILE).reason == clean(HOSTILE)


def test_an_identity_with_control_characters_is_not_believed():
    assert Identity.parse("1000\nalice\n/usr/bin/systemctl\n/bin/kill\n").user == "alice"
    with pytest.raises(ValueError):
        Identity.parse(f"0\nroot\n/usr/bin/systemctl\x1b]0;x\x07\n/bin/kill\n")


def test_burn_in_evidence_and_the_drivers_answers_are_cleaned():
    item = Item("stressor", FAIL, HOSTILE, HOSTILE)
    assert (item.evidence, item.next_step) == (clean(HOSTILE), clean(HOSTILE))
    answer = Answer.of(CommandResult(("x",), 1, json.dumps({"ok": False, "reason": HOSTILE}) + "\n", ""))
    assert answer.reason == clean(HOSTILE)
    said = Answer.of(CommandResult(("x",), 1, "", HOSTILE))
    assert unsafe_strings(said.reason) == [] and not said.ok


# --- the burn-in report -------------------------------------------------------------------


def test_the_burn_in_report_shows_node_text_as_text_html_escaped_and_json_escaped():
    from dltui.burnin import report
    from dltui.burnin import verdict as v
    from dltui.core.models import GpuFacts, NodeEvent, NodeFacts
    from tests.unit.test_burnin_verdict import T0, _run

    said = clean(HOSTILE)  # facts and events come through the probe line decoder: cleaned there
    run = _run()
    run.facts = NodeFacts(hostname=said, gpus=[GpuFacts(i, name=said, serial=said) for i in range(8)])
    run.events = [NodeEvent(T0 + 5, "xid", said, gpu=3, severity="critical", data={"xid": 79})]
    failed = v.NodeVerdict("gpu02", items=[v.Item("run", v.NOT_RUN, f"exit 1: {HOSTILE}", "start it again")])
    runs, verdicts = [run, v.NodeRun("gpu02", {}, {})], [v.judge(run), failed]
    doc = report.document("r1", runs, verdicts, v.DEFAULTS)
    html = report.page(doc, runs)
    assert "<script" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    for text in (html, report.markdown(doc), report.to_json(doc)):
        assert unsafe_strings(text.split("\n")) == [], text[:200]
    assert "exit 1: python3 ␛]0;PWNED␇" in html
