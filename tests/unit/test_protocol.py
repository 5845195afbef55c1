"""The operator side reads probe lines into models; bad lines are counted, never raised."""

import json

import pytest

from dltui.core.series import Metric, SeriesKey
from dltui.core.state import FleetState
from dltui.node.schema import GPU_FIELDS, PROTOCOL
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
    assert node.history.get(SeriesKey(Metric.GPU_UTILIZATION_PERCENT, 0)) == [97.0, 0.0]
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


GPU_TEMPERATURE = str(GPU_FIELDS.index("temperature_c"))


@pytest.mark.parametrize(
    "field, value, said",
    [
        ("temperature_c", "hot", "temperature_c is 'hot', not a number"),  # a string in a number
        ("temperature_c", True, "temperature_c is True, not a number"),  # JSON true, though Python makes it 1
        ("clock_event_reasons_mask", 4.5, "clock_event_reasons_mask is 4.5, not an int"),  # a mask: its bits are read
        ("utilization_samples_percent", [97, "x"], "utilization_samples_percent[1] is 'x', not a number"),
        ("processes", [{"pid": "4242", "name": "python3"}], "processes[0].pid is '4242', not an int"),
        ("name", {"a": 1}, "name is {'a': 1}, not a str"),  # a dict in a string
    ],
)
def test_a_field_of_the_wrong_type_is_a_malformed_line_not_a_crash_in_the_rules(field, value, said):
    """The node is hostile or broken, the rest of the line's node is not: the line is counted
    and reported as malformed with what was wrong, the node's state keeps its last good
    sample, and the next good line is read as usual (the rules run on it)."""
    from dltui.core.rules import build_engine

    fleet = FleetState(["n"], engine=build_engine(), clock=lambda: 3.0)
    reader = ProbeReader("n", fleet)
    enc = Encoder()
    reader.feed(hello())
    reader.feed(json.dumps(enc.encode(collected(1.0))))
    line = enc.encode(collected(2.0, temp=62))
    line["r"]["gpu/0"][str(GPU_FIELDS.index(field))] = value
    reader.feed(json.dumps(line))
    node = fleet.nodes["n"]
    assert reader.malformed == 1 and node.malformed_lines == 1
    assert node.sample.time == 1.0
    assert f"(gpu/0 {said})" in node.timeline[-1].message
    reader.feed(json.dumps(enc.encode(collected(3.0, temp=63))))
    assert node.sample.time == 3.0 and node.sample.gpus[0].temperature_c == 63


def test_fields_a_refused_line_changed_before_its_bad_one_reach_the_state_with_the_next_line():
    """Records are updated in place as a line is decoded: a line refused at its GPU record has
    already changed its disk record, which the next line (not naming the disk) must deliver."""
    fleet = FleetState(["n"])
    reader = ProbeReader("n", fleet)
    enc = Encoder()
    reader.feed(hello())
    reader.feed(json.dumps(enc.encode(collected(1.0))))
    bad = {"type": "sample", "time": 2.0,
           "r": {"disk/nvme0n1": {"1": 5.0}, "gpu/0": {GPU_TEMPERATURE: "hot"}}}
    reader.feed(json.dumps(bad))
    assert reader.malformed == 1
    reader.feed(json.dumps({"type": "sample", "time": 3.0, "r": {"gpu/0": {GPU_TEMPERATURE: 64}}}))
    sample = fleet.nodes["n"].sample
    assert sample.time == 3.0 and sample.gpus[0].temperature_c == 64
    assert sample.disks[0].read_bytes_per_s == 5.0



def wrong_types(kind: str, record: dict) -> list[tuple[str, object]]:
    """The fields of a probe record (by name) that the decoder's type checks would refuse."""
    from dltui.core.field_types import fits
    from dltui.node.schema import RECORD_FIELDS
    from dltui.transport.protocol import FIELD_CHECKS

    specs = FIELD_CHECKS.specs[kind]
    return [
        (name, record.get(name))
        for pos, name in enumerate(RECORD_FIELDS[kind])
        if not fits(specs[str(pos)], record.get(name))
    ]


@pytest.mark.parametrize(
    "line, said",
    [
        (hello(memory_total_bytes="lots"), "facts memory_total_bytes is 'lots', not an int"),
        (hello(gpus=[{"index": 0, "name": 5}]), "facts gpus[0].name is 5, not a str"),
        (hello(stack={"driver_held": "yes"}), "facts stack.driver_held is 'yes', not a bool"),
        (json.dumps({"type": "event", "time": 2.0, "kind": "xid", "message": 79}), "event message is 79, not a str"),
    ],
    ids=["fact", "gpu-fact", "stack-fact", "event"],
)
def test_a_hello_or_event_of_the_wrong_types_is_malformed_too(line, said):
    fleet = FleetState(["n"])
    reader = ProbeReader("n", fleet)
    reader.feed(line)
    assert reader.malformed == 1
    assert fleet.nodes["n"].timeline[-1].message.endswith(f"({said})")
