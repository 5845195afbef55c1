"""The SSH channel's reader: bytes as packets cut them, lines to the ProbeReader in order."""

import json

import asyncssh

from dltui.core.series import Metric, SeriesKey
from dltui.core.state import FleetState
from dltui.node.wire import Encoder
from dltui.transport.protocol import ProbeReader
from dltui.transport.ssh.fleet import MAX_LINE_BYTES, STDERR_KEPT_BYTES, _ProbeSession
from tests.unit.test_protocol import hello
from tests.unit.test_wire import collected

UTIL0 = SeriesKey(Metric.GPU_UTILIZATION_PERCENT, 0)


class Channel:
    def __init__(self):
        self.closed = 0

    def close(self):
        self.closed += 1


def session_for(fleet, name="gpu01"):
    said = []
    session = _ProbeSession(ProbeReader(name, fleet), said.append)
    chan = Channel()
    session.connection_made(chan)
    return session, chan, said


def probe_bytes():
    enc = Encoder()
    lines = [hello(), *(json.dumps(enc.encode(collected(float(t), util=10.0 * t))) for t in (1, 2, 3))]
    return ("\n".join(lines) + "\n").encode()


async def test_lines_cut_anywhere_by_packets_arrive_whole_and_in_order():
    fleet = FleetState(["gpu01"], clock=lambda: 100.0)
    session, chan, said = session_for(fleet)
    data = probe_bytes()
    for cut in range(0, len(data), 37):  # packets that end mid-line, mid-number, mid-UTF-8
        session.data_received(data[cut:cut + 37], None)
    node = fleet.nodes["gpu01"]
    assert said == [fleet]  # "ok" once, on the hello
    assert node.history.get(UTIL0) == [10.0, 20.0, 30.0]
    assert session.reader.malformed == 0 and chan.closed == 0


async def test_stderr_keeps_only_its_tail_and_never_reaches_the_reader():
    fleet = FleetState(["gpu01"])
    session, _, _ = session_for(fleet)
    session.data_received(b"x" * STDERR_KEPT_BYTES, asyncssh.EXTENDED_DATA_STDERR)
    session.data_received(b"Traceback: the end\n", asyncssh.EXTENDED_DATA_STDERR)
    assert len(session.stderr) == STDERR_KEPT_BYTES and session.stderr.endswith(b"the end\n")
    assert session.reader.malformed == 0 and fleet.nodes["gpu01"].facts is None


async def test_a_runaway_line_without_newline_is_dropped_as_malformed_and_streaming_goes_on():
    fleet = FleetState(["gpu01"], clock=lambda: 100.0)
    session, chan, _ = session_for(fleet)
    session.data_received(hello().encode() + b"\n", None)
    chunk = b"A" * 65536
    for _ in range(MAX_LINE_BYTES // len(chunk) + 1):
        session.data_received(chunk, None)
    assert session.reader.malformed == 1 and len(session.partial) < MAX_LINE_BYTES
    session.data_received(b"tail of the runaway\n" + probe_bytes().split(b"\n", 1)[1], None)
    assert session.reader.malformed == 2  # its tail is one more bad line, then good ones
    assert fleet.nodes["gpu01"].history.get(UTIL0) == [10.0, 20.0, 30.0]
    assert chan.closed == 0


async def test_a_probe_of_another_protocol_closes_the_channel_with_the_reason():
    fleet = FleetState(["gpu01"])
    session, chan, said = session_for(fleet)
    session.data_received(b'{"type":"hello","protocol":999,"facts":{}}\n', None)
    assert chan.closed == 1 and said == []
    assert "protocol 999" in str(session.protocol_error)


async def test_a_bug_behind_the_reader_is_kept_for_the_node_not_swallowed():
    class BrokenSink(FleetState):
        def on_sample(self, name, sample):
            raise RuntimeError("rules exploded")

    session, chan, _ = session_for(BrokenSink(["gpu01"]))
    session.data_received(probe_bytes(), None)
    assert chan.closed == 1 and isinstance(session.bug, RuntimeError)


async def test_closed_resolves_once_with_the_connection_error():
    session, _, _ = session_for(FleetState(["gpu01"]))
    lost = asyncssh.ConnectionLost("link down")
    session.connection_lost(lost)
    session.connection_lost(None)
    assert session.closed.result() is lost


async def test_a_last_line_without_newline_is_read_at_end_of_file():
    fleet = FleetState(["gpu01"], clock=lambda: 100.0)
    session, chan, said = session_for(fleet)
    session.data_received(probe_bytes().rstrip(b"\n"), None)
    assert fleet.nodes["gpu01"].history.get(UTIL0) == [10.0, 20.0]
    session.eof_received()
    assert fleet.nodes["gpu01"].history.get(UTIL0) == [10.0, 20.0, 30.0]
