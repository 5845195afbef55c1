"""The operator side reads probe lines into models; bad lines are counted, never raised."""

import json

import pytest

from dltui.core.state import FleetState
from dltui.node.schema import PROTOCOL
from dltui.node.wire import Encoder
from dltui.transport.protocol import ProbeReader, ProtocolError
from tests.unit.test_wire import collected


def hello(**facts):
    return json.dumps({"type": "hello", "protocol": PROTOCOL, "probe_version": "0.1.0", "time": 1.0,
                       "interval_s": 1.0, "facts": {"hostname": "gpu01", **facts}})


def test_hello_samples_events_and_errors_reach_the_fleet_state():
    fleet = FleetState(["gpu01"], clock=lambda: 100.0)
    reader = ProbeReader("gpu01", fleet)
    enc = Encoder()
    reader.feed(hello(kernel="6.1.0"))
    reader.feed(json.dumps(enc.encode(collected(1.0))))
    reader.feed(json.dumps(enc.encode(collected(2.0, util=0.0))) + "\n")
    reader.feed(json.dumps({"type": "error", "time": 2.0, "source": "diskstats", "message": "Permission denied"}))
    reader.feed(json.dumps({"type": "event", "time": 2.0, "kind": "xid", "message": "Xid 79", "gpu": 0,
                            "severity": "critical", "data": {"xid": 79}}))
    node = fleet.nodes["gpu01"]
    assert node.facts.kernel == "6.1.0"
    assert node.sample.time == 2.0
    assert node.sample.gpus[0].utilization_percent == 0.0
    assert node.sample.disks[0].name == "nvme0n1"
    assert node.history.get("gpu.0.utilization_percent") == [97.0, 0.0]
    kinds = [e.kind for e in node.timeline]
    assert kinds == ["probe-error", "xid"]
    assert node.timeline[0].message == "diskstats: Permission denied"


def test_unchanged_records_are_reused_not_rebuilt():
    fleet = FleetState(["n"])
    reader = ProbeReader("n", fleet)
    enc = Encoder()
    reader.feed(hello())
    reader.feed(json.dumps(enc.encode(collected(1.0))))
    first = fleet.nodes["n"].sample
    reader.feed(json.dumps(enc.encode(collected(2.0, util=5.0))))
    second = fleet.nodes["n"].sample
    assert second.disks[0] is first.disks[0]
    assert second.cpu is first.cpu
    assert second.gpus[0] is not first.gpus[0]


@pytest.mark.parametrize("garbage", ["not json", '{"type": "sample"', '{"type": "weird"}', "[1, 2]", '{"no": "type"}'])
def test_a_malformed_line_is_counted_and_reported_and_streaming_goes_on(garbage):
    fleet = FleetState(["n"])
    reader = ProbeReader("n", fleet)
    enc = Encoder()
    reader.feed(hello())
    reader.feed(garbage)
    reader.feed(json.dumps(enc.encode(collected(1.0))))
    node = fleet.nodes["n"]
    assert reader.malformed == 1
    assert node.malformed_lines == 1
    assert node.sample is not None
    assert node.timeline[-1].kind == "malformed-line"
    assert "malformed line (1 so far)" in node.timeline[-1].message


def test_blank_lines_are_ignored_silently():
    reader = ProbeReader("n", FleetState(["n"]))
    reader.feed("")
    reader.feed(b"\n")
    assert reader.malformed == 0


def test_a_probe_speaking_another_protocol_is_refused_plainly():
    reader = ProbeReader("n", FleetState(["n"]))
    with pytest.raises(ProtocolError, match="probe speaks protocol 99"):
        reader.feed(json.dumps({"type": "hello", "protocol": 99, "facts": {}}))


def test_an_error_in_the_state_or_rules_is_raised_not_counted_as_a_bad_line():
    class BrokenState(FleetState):
        def on_sample(self, name, sample):
            raise KeyError("a bug in a rule")

    reader = ProbeReader("n", BrokenState(["n"]))
    reader.feed(hello())
    with pytest.raises(KeyError, match="a bug in a rule"):
        reader.feed(json.dumps(Encoder().encode(collected(1.0))))
    assert reader.malformed == 0
