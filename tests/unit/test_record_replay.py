"""``--record`` writes every sink call to a file; ``dltui replay`` makes the same calls again."""

import asyncio
import contextlib
import gzip
import json
import shutil

import pytest

from dltui.core import status as st
from dltui.core.models import GpuFacts, GpuSample, NodeEvent, NodeFacts, Sample
from dltui.core.state import FleetState
from dltui.transport.recording.recorder import RecordError, Recorder
from dltui.transport.local import LocalTransport
from dltui.transport.recording.replay import ReplayError, ReplayTransport

NODES = ["gpu01", "gpu02"]
T0 = 1_767_258_000.0


class CallLog:
    """A sink that notes every call, then passes it on."""

    def __init__(self, sink):
        self.sink = sink
        self.calls = []

    def on_status(self, name, status, reason=None):
        self.calls.append(("status", name, status, reason))
        self.sink.on_status(name, status, reason)

    def on_hello(self, name, facts, interval_s=None):
        self.calls.append(("hello", name, facts, interval_s))
        self.sink.on_hello(name, facts, interval_s)

    def on_sample(self, name, sample):
        self.calls.append(("sample", name, sample))
        self.sink.on_sample(name, sample)

    def on_event(self, name, event):
        self.calls.append(("event", name, event))
        self.sink.on_event(name, event)

    def count(self, kind):
        return sum(1 for call in self.calls if call[0] == kind)


def stepping_clock(start=1_767_258_000.0, step=1.0):
    """A wall clock that moves ``step`` seconds each time it is read."""
    now = [start - step]

    def clock():
        now[0] += step
        return now[0]

    return clock


def two_nodes_calls(sink):
    """What a transport says about two nodes: every kind of call, with the values typed in."""
    sink.on_status("gpu01", st.CONNECTING)
    facts = NodeFacts(hostname="gpu01", driver_version="550.90.07", gpus=[GpuFacts(0, name="NVIDIA H100 80GB HBM3")])
    sink.on_hello("gpu01", facts, 1.0)
    sink.on_status("gpu01", st.OK)
    hot = GpuSample(0, utilization_percent=97.0, temperature_c=71.0, clock_event_reasons=["sw_thermal"])
    sink.on_sample("gpu01", Sample(time=1_767_258_001.5, gpus=[hot]))
    xid = NodeEvent(1_767_258_002.0, "xid", "Xid 79: GPU has fallen off the bus", gpu=0, severity="critical", data={"xid": 79})
    sink.on_event("gpu01", xid)
    sink.on_sample("gpu01", Sample(time=1_767_258_002.5, gpus=[GpuSample(0, error="GPU is lost")]))
    sink.on_status("gpu02", st.UNREACHABLE, "connection refused; is sshd running on gpu02?")


async def play(replay, sink):
    """Run the replay until every line is played; return the task still holding the state."""
    task = asyncio.create_task(replay.run(sink))
    await asyncio.wait_for(replay.finished.wait(), 60)  # a guard against a hang, not a timing check
    return task


async def stop(task):
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def lines_of(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as file:
        return [json.loads(line) for line in file]


async def test_a_recorded_local_run_replays_into_the_same_state(tmp_path):
    """The real probe on this machine's /proc, two samples, back through the same calls."""
    path = tmp_path / "local.jsonl"
    live = FleetState(["localhost"])
    live_calls = CallLog(live)
    with Recorder.create(live_calls, path, ["localhost"]) as recorder:
        task = asyncio.create_task(LocalTransport(interval_s=0.1).run(recorder))

        async def two_samples():
            while live_calls.count("sample") < 2:
                await asyncio.sleep(0.01)

        await asyncio.wait_for(two_samples(), 60)
        await stop(task)

    lines = lines_of(path)
    assert lines[0]["dltui_recording"] == 2 and lines[0]["nodes"] == ["localhost"]
    # samples as the wire's deltas: the first a keyframe, the second only what changed
    deltas = [line["sample"] for line in lines[1:] if line["kind"] == "delta"]
    assert len(deltas) == 2 and deltas[0]["key"] == 1 and "key" not in deltas[1]
    assert lines[1:4] == [
        {"t": lines[1]["t"], "node": "localhost", "kind": "status", "status": "connecting", "reason": None},
        {"t": lines[2]["t"], "node": "localhost", "kind": "hello",
         "facts": live.nodes["localhost"].facts.to_dict(), "interval_s": 0.1},
        {"t": lines[3]["t"], "node": "localhost", "kind": "status", "status": "ok", "reason": None},
    ]

    replay = ReplayTransport(path, speed=0)
    assert replay.names == ["localhost"]
    played = FleetState(replay.names, clock=replay.clock)
    played_calls = CallLog(played)
    await stop(await play(replay, played_calls))

    last_t = lines[-1]["t"]
    end = ("event", "localhost", NodeEvent(last_t, "replay", f"end of recording ({len(lines) - 1} lines)"))
    assert played_calls.calls == live_calls.calls + [end]
    node, was = played.nodes["localhost"], live.nodes["localhost"]
    assert node.facts == was.facts and node.facts.hostname is not None
    assert node.sample == was.sample
    assert node.history.time.values() == was.history.time.values()
    assert (node.status, node.interval_s) == (st.OK, 0.1)
    status_entries = [(e.time, e.message) for e in node.timeline if e.kind == "status"]
    assert status_entries == [(lines[3]["t"], "ok")]  # at the recorded time, not the replay's
    assert replay.clock() == last_t and replay.malformed == 0


@pytest.mark.parametrize("speed", [0, 1000])
async def test_every_kind_of_call_comes_back_with_its_recorded_time(tmp_path, speed):
    path = tmp_path / "two.jsonl"
    recorded = CallLog(FleetState(NODES))
    with Recorder.create(recorded, path, NODES, clock=stepping_clock()) as recorder:
        two_nodes_calls(recorder)

    replay = ReplayTransport(path, speed=speed)
    fleet = FleetState(replay.names, clock=replay.clock)
    played = CallLog(fleet)
    await stop(await play(replay, played))

    assert replay.names == NODES
    assert played.calls[:7] == recorded.calls
    assert [call[2].message for call in played.calls[7:]] == ["end of recording (7 lines)"] * 2
    gpu01 = fleet.nodes["gpu01"]
    assert gpu01.sample.gpus[0].error == "GPU is lost"
    assert [(e.time, e.kind, e.message, e.gpu) for e in gpu01.timeline][:2] == [
        (1_767_258_003.0, "status", "ok", None),  # the clock read 003.0 when "ok" was recorded
        (1_767_258_002.0, "xid", "Xid 79: GPU has fallen off the bus", 0),  # the node's own time
    ]
    gpu02 = fleet.nodes["gpu02"]
    assert (gpu02.status, gpu02.reason) == (st.UNREACHABLE, "connection refused; is sshd running on gpu02?")
    assert replay.clock() == 1_767_258_007.0


async def test_a_garbage_line_and_a_cut_off_last_line_are_counted_and_reported(tmp_path):
    path = tmp_path / "damaged.jsonl"
    with Recorder.create(FleetState(NODES), path, NODES, clock=stepping_clock()) as recorder:
        two_nodes_calls(recorder)
    lines = path.read_bytes().splitlines(keepends=True)
    damaged = lines[:3] + [b"\x00\x00 not json at all\n"] + lines[3:-1] + [lines[-1][:25]]
    path.write_bytes(b"".join(damaged))

    replay = ReplayTransport(path, speed=0)
    fleet = FleetState(replay.names, clock=replay.clock)
    played = CallLog(fleet)
    await stop(await play(replay, played))

    assert replay.malformed == 2
    reports = [call for call in played.calls if call[0] == "event" and call[2].kind == "replay-error"]
    assert [(name, event.data) for _, name, event in reports] == [
        ("gpu01", {"count": 1, "line": 4}),
        ("gpu02", {"count": 1, "line": 4}),
    ]
    assert reports[0][2].message.startswith("recording line 4 is unreadable (1 so far): '\\x00\\x00 not json at all'")
    assert played.count("sample") == 2  # everything but the cut-off line still plays
    assert fleet.nodes["gpu02"].status == st.CONNECTING  # its only line was the cut-off one
    assert fleet.nodes["gpu01"].timeline[-1].message == "end of recording (6 lines, 2 unreadable)"


@pytest.mark.parametrize(
    "line, said",
    [
        ({"kind": "sample", "sample": {"time": T0 + 1, "gpus": [{"index": 0, "temperature_c": "hot"}]}},
         "sample gpus[0].temperature_c is 'hot', not a number"),
        ({"kind": "hello", "facts": {"hostname": "gpu01", "memory_total_bytes": "lots"}},
         "facts memory_total_bytes is 'lots', not an int"),
        ({"kind": "event", "event": {"time": T0 + 1, "kind": "xid", "message": ["not", "text"]}},
         "event message is ['not', 'text'], not a str"),
    ],
    ids=["sample", "hello", "event"],
)
async def test_a_line_whose_values_are_not_of_their_types_is_unreadable_and_the_rest_plays(tmp_path, line, said):
    """A recording from elsewhere is read as carefully as a node's lines: before, a sample's
    "hot" temperature reached the rules, whose TypeError ended the playback there."""
    from dltui.core.rules import build_engine
    from dltui.transport.recording.format import header

    path = tmp_path / "typed.jsonl"
    good = {"kind": "sample", "sample": {"time": T0 + 2, "gpus": [{"index": 0, "temperature_c": 60}]}}
    lines = [header(T0, ["gpu01"]), {"t": T0 + 1, "node": "gpu01", **line}, {"t": T0 + 2, "node": "gpu01", **good}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    replay = ReplayTransport(path, speed=0)
    fleet = FleetState(replay.names, engine=build_engine(), clock=replay.clock)
    await stop(await play(replay, fleet))
    node = fleet.nodes["gpu01"]
    assert replay.malformed == 1 and node.sample.gpus[0].temperature_c == 60
    assert node.timeline[0].message.endswith(f"({said})")
    assert node.timeline[-1].message == "end of recording (1 lines, 1 unreadable)"


async def test_gzip_recordings_round_trip_and_a_cut_off_one_plays_up_to_its_last_flush(tmp_path):
    path = tmp_path / "two.jsonl.gz"
    recorded = CallLog(FleetState(NODES))
    recorder = Recorder.create(recorded, path, NODES, clock=stepping_clock())
    two_nodes_calls(recorder)
    recorder.flush()
    killed = tmp_path / "killed.jsonl.gz"  # what a dashboard killed now leaves: no gzip trailer
    shutil.copy(path, killed)
    recorder.close()
    assert path.read_bytes()[:2] == b"\x1f\x8b"

    replay = ReplayTransport(path, speed=0)
    played = CallLog(FleetState(replay.names))
    await stop(await play(replay, played))
    assert played.calls[:7] == recorded.calls and replay.malformed == 0

    replay = ReplayTransport(killed, speed=0)
    played = CallLog(FleetState(replay.names))
    await stop(await play(replay, played))
    assert played.calls[:7] == recorded.calls
    assert replay.malformed == 1
    assert "the file ends in the middle of a compressed block" in played.calls[7][2].message


async def test_a_full_disk_stops_recording_with_one_event_per_node_and_the_dashboard_goes_on():
    """/dev/full: the kernel answers every write with ENOSPC."""
    fleet = FleetState(NODES)
    calls = CallLog(fleet)
    recorder = Recorder(calls, open("/dev/full", "wb"), NODES, clock=stepping_clock())
    two_nodes_calls(recorder)
    recorder.flush()

    assert recorder.error == "/dev/full: No space left on device"
    stopped = [(call[1], call[2].message) for call in calls.calls if call[0] == "event" and call[2].kind == "recording"]
    assert stopped == [
        ("gpu01", "recording stopped: /dev/full: No space left on device"),
        ("gpu02", "recording stopped: /dev/full: No space left on device"),
    ]
    recorder.on_status("gpu02", st.OK)
    recorder.on_sample("gpu02", Sample(time=1_767_258_010.0))
    recorder.close()
    gpu02 = fleet.nodes["gpu02"]
    assert gpu02.status == st.OK and gpu02.sample == Sample(time=1_767_258_010.0)
    assert [e.message for e in gpu02.timeline].count("recording stopped: /dev/full: No space left on device") == 1


def test_a_recording_is_never_overwritten_and_an_impossible_path_is_said_at_once(tmp_path):
    existing = tmp_path / "last-night.jsonl"
    existing.write_text("precious\n")
    with pytest.raises(RecordError, match="last-night.jsonl: already exists; dltui does not overwrite a recording"):
        Recorder.create(FleetState(), existing, NODES)
    assert existing.read_text() == "precious\n"
    with pytest.raises(RecordError, match="no-such-dir/r.jsonl: cannot create the recording: No such file or direc"):
        Recorder.create(FleetState(), tmp_path / "no-such-dir" / "r.jsonl", NODES)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        (b"", "not a dltui recording (no header line)"),
        (b"epoch,gpu,util\n1,0,97\n", "not a dltui recording (no header line)"),
        (b'{"dltui_recording": 3, "started": 1.0, "nodes": []}\n',
         "recording format 3; this dltui reads format 1 and 2"),
        (b'{"dltui_recording": 1, "started": 1.0}\n',
         "not a dltui recording (the header line lacks nodes or start time)"),
        (b"\x1f\x8b this is no gzip", "not a dltui recording (a broken gzip file)"),
    ],
)
def test_a_file_that_is_not_a_recording_is_refused_with_the_reason(tmp_path, content, message):
    path = tmp_path / "input"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ReplayError) as raised:
        ReplayTransport(path)
    assert str(raised.value) == f"{path}: {message}"


def test_a_directory_is_refused_with_the_reason(tmp_path):
    with pytest.raises(ReplayError) as raised:
        ReplayTransport(tmp_path)
    assert str(raised.value) == f"{tmp_path}: is a directory, not a recording"
