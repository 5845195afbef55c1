"""``--record`` writes samples as the wire's deltas; the replay rebuilds every one of them."""

from __future__ import annotations

import json

from dltui.core.models import Sample
from dltui.transport.demo import DemoTransport
from dltui.transport.recording.format import SampleDeltas, SampleRebuilder, encode, parse_line


class Samples:
    def __init__(self) -> None:
        self.got: list[tuple[str, Sample]] = []

    def on_sample(self, name: str, sample: Sample) -> None:
        self.got.append((name, sample))

    def on_status(self, *args: object) -> None:
        pass

    def on_hello(self, *args: object) -> None:
        pass

    def on_event(self, *args: object) -> None:
        pass


def _demo_samples(steps: int) -> list[tuple[str, Sample]]:
    sink = Samples()
    DemoTransport(nodes=3, gpus=8, seed=7).step_into(sink, steps)
    return sink.got


def test_delta_lines_replay_into_the_very_samples_recorded_and_are_a_fraction_of_whole_ones():
    """Three 8-GPU nodes for 70 s (past two keyframes): each sample comes back equal, records in
    their order; the lines are a fraction of the whole samples' bytes."""
    samples = _demo_samples(70)
    deltas, rebuilt = SampleDeltas(), SampleRebuilder()
    whole = as_delta = 0
    for i, (name, sample) in enumerate(samples):
        line = encode(
            {"t": sample.time, "node": name, "kind": "delta", "sample": deltas.encode(name, sample)}
        )
        whole += len(
            encode({"t": sample.time, "node": name, "kind": "sample", "sample": sample.to_dict()})
        )
        as_delta += len(line)
        _, call, (who, back) = parse_line(line, rebuilt)
        assert (call, who) == ("on_sample", name)
        assert back == sample, f"line {i} ({name}) came back different"
    assert as_delta < 0.4 * whole


def test_a_delta_before_its_nodes_keyframe_is_unreadable_and_the_next_keyframe_recovers():
    """A recording cut at the front (or a line lost): its deltas cannot be rebuilt, and say so,
    until the node's next keyframe (every 30 of its samples)."""
    samples = [s for name, s in _demo_samples(40) if name == "gpu01"]
    deltas = SampleDeltas()
    lines = [
        encode({"t": s.time, "node": "gpu01", "kind": "delta", "sample": deltas.encode("gpu01", s)})
        for s in samples
    ]
    rebuilt = SampleRebuilder()
    refused = 0
    for i, line in enumerate(lines[1:], start=1):
        try:
            _, _, (_, back) = parse_line(line, rebuilt)
        except ValueError:
            refused += 1
            assert not json.loads(line)["sample"].get("key")
            continue
        assert i >= 30 and back == samples[i]
    assert refused == 29
