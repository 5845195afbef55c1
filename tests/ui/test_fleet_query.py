"""The fleet filter and sort keys, on the seeded demo fleet."""

import pytest

from dltui.core.models import GpuSample, Sample
from dltui.core.state import FleetState
from dltui.transport.demo import DemoTransport
from dltui.ui.fleet_query import FilterError, parse_filter, sort_nodes


@pytest.fixture(scope="module")
def fleet():
    demo = DemoTransport(nodes=12, seed=7)
    fleet = FleetState(demo.names, clock=demo.clock)
    demo.step_into(fleet, 180)
    return fleet


def shown(fleet, text):
    f = parse_filter(text)
    return [n.name for n in fleet if f(n, fleet.clock())]


def test_a_gpu_key_holds_when_any_gpu_satisfies_it(fleet):
    assert shown(fleet, "temp>85") == ["gpu02"]
    assert shown(fleet, "util<5") == ["gpu06"]
    assert shown(fleet, "margin <= 3") == ["gpu02"]  # spaces around the operator are fine


def test_host_keys_status_and_text_terms(fleet):
    assert shown(fleet, "io>=20") == ["gpu03"]
    assert shown(fleet, "status!=ok") == ["gpu04"]
    assert shown(fleet, "unreachable") == ["gpu04"]  # plain text: name, status or reason
    assert shown(fleet, "keepalive") == ["gpu04"]
    assert shown(fleet, "gpu1") == ["gpu10", "gpu11", "gpu12"]
    assert shown(fleet, "gpu1 util>99") == ["gpu10", "gpu11", "gpu12"]  # terms must all hold
    assert shown(fleet, "age>30") == ["gpu04"]


def test_the_fabric_key_finds_the_node_with_a_port_down():
    """The demo's gpu05 loses HCA port mlx5_3 two minutes in: the rules' alert makes its fabric
    badge "down"."""
    from dltui.core.rules import build_engine

    demo = DemoTransport(nodes=12, seed=7)
    fleet = FleetState(demo.names, engine=build_engine(), clock=demo.clock)
    demo.step_into(fleet, 180)
    fleet.tick()
    assert shown(fleet, "fabric=down") == ["gpu05"]
    assert "gpu05" not in shown(fleet, "fabric=ok") and "gpu01" in shown(fleet, "fabric=ok")
    assert shown(fleet, "fabric=none") == []  # every demo node has HCAs and NVLink


def test_an_unreported_value_never_matches():
    fleet = FleetState(["a", "b"], clock=lambda: 10.0)
    fleet.on_sample("a", Sample(time=10.0, gpus=[GpuSample(0, temperature_c=None, utilization_percent=None)]))
    fleet.on_sample("b", Sample(time=10.0, gpus=[GpuSample(0, temperature_c=40.0, utilization_percent=0.0)]))
    assert shown(fleet, "temp>=0") == ["b"]
    assert shown(fleet, "temp<1000") == ["b"]
    assert shown(fleet, "util=0") == ["b"]  # n/a is not 0


@pytest.mark.parametrize(
    "text, message",
    [
        ("tmp>80", "unknown key 'tmp'"),
        ("temp>hot", "'hot' is not a number"),
        ("status>ok", "status takes = or !="),
    ],
)
def test_a_filter_that_cannot_be_understood_says_why(text, message):
    with pytest.raises(FilterError, match=message):
        parse_filter(text)


def test_sort_keys_put_what_needs_a_look_first(fleet):
    nodes = list(fleet)
    assert [n.name for n in sort_nodes(nodes, "temp")][:1] == ["gpu02"]
    assert [n.name for n in sort_nodes(nodes, "util")][:2] == ["gpu06", "gpu03"]
    assert [n.name for n in sort_nodes(nodes, "status")][:1] == ["gpu04"]
    assert [n.name for n in sort_nodes(reversed(nodes), "name")] == [f"gpu{i:02d}" for i in range(1, 13)]
