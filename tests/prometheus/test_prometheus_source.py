"""The Prometheus source's mapping, on real dcgm-exporter captures (tests/fixtures/dcgm-exporter):
the same Sample model, None where a series is absent or DCGM says "blank", label spellings and
metric names of every dcgm-exporter version, a bounded number of queries."""

from __future__ import annotations

import copy
import json

import pytest

from dltui.core import status as st
from dltui.core.models import NodeFacts, Sample
from dltui.core.rules import build_engine
from dltui.core.state import FleetState
from dltui.transport.prometheus import PrometheusTransport, SelectorError, build, matchers, queries
from dltui.transport.prometheus import client as client_module
from dltui.transport.prometheus.queries import REFRESH_QUERIES
from tests.unit.rules_support import busy_gpu

from .promtext import capture, vector


def _answers(
    gpu: list[dict], host: list[dict] | None = None, rates: list[dict] | None = None
) -> dict:
    # The facts query groups the same series by their fact labels: the same label sets here.
    return {
        "gpu": {"result": gpu},
        "host": {"result": host or []},
        "rates": {"result": rates or []},
        "gpu_facts": {"result": gpu},
        "smartctl": {"result": []},
    }


def test_the_a100_capture_maps_into_one_node_and_skips_the_mig_instance():
    fleet = build(_answers(vector(capture("a100-mig_ub20-a100-k8s.prom"), "10.0.0.7:9400", "dcgm")))
    assert list(fleet.nodes) == ["ub20-a100-k8s"]
    (g,) = fleet.sample("ub20-a100-k8s").gpus
    assert (g.index, g.uuid) == (0, "GPU-34319582-d595-d1c7-d1d2-179bcfa61660")
    assert (g.temperature_c, g.memory_temperature_c, g.power_w) == (61, 69, 409.692)
    assert (g.sm_clock_mhz, g.memory_clock_mhz, g.pcie_replay_count) == (1215, 1215, 0)
    assert (g.memory_used_mib, g.memory_total_mib) == (4845, 4845 + 35690)
    # Not in the capture: n/a, never 0.
    assert g.utilization_percent is None and g.clock_event_reasons_mask is None
    assert g.ecc_uncorrected_volatile is None and g.name is None
    assert g.utilization_samples_percent == []
    facts = fleet.facts("ub20-a100-k8s")
    assert facts.gpu_source == "dcgm-exporter" and facts.gpus[0].memory_total_mib == 40535
    assert fleet.sample("ub20-a100-k8s").cpu is None  # no node_exporter: the host is n/a


def test_a_dcgm_blank_is_na_and_a_host_without_hostname_label_is_its_instance():
    fleet = build(_answers(vector(capture("readme-quickstart.prom"), "gpu07:9400", "dcgm")))
    (g,) = fleet.sample("gpu07").gpus
    assert g.sm_clock_mhz == 139 and g.memory_clock_mhz == 405
    assert g.memory_temperature_c is None  # 9223372036854775794: DCGM's "not supported"


def test_both_hostname_spellings_model_name_and_both_reason_metric_names():
    old = vector(capture("a100-mig_ub20-a100-k8s.prom"), "a:9400", "dcgm")
    new = [
        {**s, "metric": {("hostname" if k == "Hostname" else k): v for k, v in s["metric"].items()}}
        for s in vector(
            capture("a100-mig_ub20-a100-k8s.prom").replace("ub20-a100-k8s", "gpu02"),
            "b:9400",
            "dcgm",
        )
    ]
    for s in new:
        s["metric"]["modelName"] = "NVIDIA A100-SXM4-40GB"
    base = {"gpu": "0", "UUID": "GPU-34319582-d595-d1c7-d1d2-179bcfa61660"}
    throttle = [
        {
            "metric": {
                "__name__": "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
                **base,
                "Hostname": "ub20-a100-k8s",
            },
            "value": [1.0, "136"],
        },
        {
            "metric": {
                "__name__": "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
                **base,
                "hostname": "gpu02",
            },
            "value": [1.0, "1"],
        },
        {
            "metric": {"__name__": "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", **base, "hostname": "gpu02"},
            "value": [1.0, "4"],
        },
    ]
    fleet = build(_answers(old + new + throttle))
    assert sorted(fleet.nodes) == ["gpu02", "ub20-a100-k8s"]
    a = fleet.sample("ub20-a100-k8s").gpus[0]
    assert a.clock_event_reasons_mask == 0x88
    assert a.clock_event_reasons == ["hw_slowdown", "hw_power_brake_slowdown"]
    b = fleet.sample("gpu02").gpus[0]
    assert b.name == "NVIDIA A100-SXM4-40GB" and b.temperature_c == 61
    assert b.clock_event_reasons_mask == 4  # the current name wins over the deprecated one


def _host(instance: str, nodename: str) -> tuple[list[dict], list[dict]]:
    gauges = [
        {"metric": {"__name__": "up", "instance": instance, "job": "node"}, "value": [1.0, "1"]},
        {
            "metric": {
                "__name__": "node_uname_info",
                "instance": instance,
                "nodename": nodename,
                "release": "6.1.0-18-amd64",
            },
            "value": [1.0, "1"],
        },
        {
            "metric": {"__name__": "node_memory_MemTotal_bytes", "instance": instance},
            "value": [1.0, "1000"],
        },
        {
            "metric": {"__name__": "node_memory_MemAvailable_bytes", "instance": instance},
            "value": [1.0, "250"],
        },
        {
            "metric": {
                "__name__": "node_filesystem_size_bytes",
                "instance": instance,
                "mountpoint": "/data",
                "fstype": "ext4",
                "device": "/dev/nvme0n1",
            },
            "value": [1.0, "100"],
        },
        {
            "metric": {
                "__name__": "node_filesystem_free_bytes",
                "instance": instance,
                "mountpoint": "/data",
                "fstype": "ext4",
                "device": "/dev/nvme0n1",
            },
            "value": [1.0, "40"],
        },
        {
            "metric": {
                "__name__": "node_filesystem_avail_bytes",
                "instance": instance,
                "mountpoint": "/data",
                "fstype": "ext4",
                "device": "/dev/nvme0n1",
            },
            "value": [1.0, "30"],
        },
        {
            "metric": {
                "__name__": "node_filesystem_size_bytes",
                "instance": instance,
                "mountpoint": "/run",
                "fstype": "tmpfs",
            },
            "value": [1.0, "5"],
        },
    ]
    rates = [
        {"metric": {"instance": instance, "mode": mode, "dltui": "cpu"}, "value": [1.0, v]}
        for mode, v in (("idle", "6"), ("user", "1.5"), ("system", "0.5"), ("iowait", "0"))
    ] + [
        {"metric": {"instance": instance, "dltui": "cpus"}, "value": [1.0, "8"]},
        {
            "metric": {"instance": instance, "device": "nvme0n1", "dltui": "disk_read"},
            "value": [1.0, "2048"],
        },
        {
            "metric": {"instance": instance, "device": "nvme0n1", "dltui": "disk_busy"},
            "value": [1.0, "0.25"],
        },
        {
            "metric": {"instance": instance, "device": "eth0", "dltui": "net_rx"},
            "value": [1.0, "1e6"],
        },
    ]
    return gauges, rates


def test_host_series_join_the_gpus_on_the_node_exporters_nodename():
    gpu = vector(capture("a100-mig_ub20-a100-k8s.prom"), "10.0.0.7:9400", "dcgm")
    gauges, rates = _host("10.0.0.7:9100", "ub20-a100-k8s")
    fleet = build(_answers(gpu, gauges, rates))
    assert list(fleet.nodes) == ["ub20-a100-k8s"]
    s = fleet.sample("ub20-a100-k8s")
    assert s.cpu.total_percent == 25.0 and s.cpu.user_percent == 18.75
    assert (s.memory.total_bytes, s.memory.used_bytes) == (1000, 750)
    assert [(f.mountpoint, f.used_bytes, f.available_bytes) for f in s.filesystems] == [
        ("/data", 60, 30)
    ]
    assert s.disks[0].read_bytes_per_s == 2048 and s.disks[0].busy_percent == 25.0
    assert s.disks[0].write_bytes_per_s is None  # no series: n/a
    assert s.networks[0].rx_bytes_per_s == 1e6 and s.networks[0].rx_errors_total is None
    facts = fleet.facts("ub20-a100-k8s")
    assert (facts.kernel, facts.cpu_count, facts.memory_total_bytes) == ("6.1.0-18-amd64", 8, 1000)
    assert fleet.status("ub20-a100-k8s") == (st.OK, None)


def test_a_node_whose_targets_are_all_down_is_unreachable():
    gauges, _ = _host("10.0.0.9:9100", "gpu09")
    gauges[0]["value"] = [1.0, "0"]
    fleet = build(_answers([], gauges))
    status, reason = fleet.status("gpu09")
    assert status == st.UNREACHABLE and "10.0.0.9:9100" in reason


def test_three_queries_per_refresh_whatever_the_fleet_size_with_the_match_inside_each():
    q = queries('{job=~"gpu.*"}')
    assert REFRESH_QUERIES == ("gpu", "host", "rates") and list(q) == [*REFRESH_QUERIES, "gpu_facts", "smartctl"]
    assert all('job=~"gpu.*"' in text for text in q.values())
    # Every refresh reads only the labels that tell readings apart; the facts come apart.
    assert "UUID" not in q["gpu"] and "modelName" not in q["gpu"]
    assert "UUID" in q["gpu_facts"] and "DCGM_FI_DRIVER_VERSION" in q["gpu_facts"]
    assert matchers('job="a", cluster!="b"') == 'job="a", cluster!="b"'
    for bad in ("{job=", 'job="a"}', "up"):
        with pytest.raises(SelectorError):
            matchers(bad)


class _Recorded:
    """A client that answers from recorded answers and counts the queries; each answer a
    fresh copy, as a real query's (the transport frees its answers once mapped)."""

    def __init__(self, answers: dict):
        self.answers, self.queries, self.url = answers, 0, "http://prom:9090"

    async def query(self, promql: str) -> dict:
        self.queries += 1
        for key, text in queries().items():
            if promql == text:
                return copy.deepcopy(self.answers[key])
        raise AssertionError(promql)


async def test_the_transport_delivers_status_facts_sample_and_a_note_on_the_coarse_signal():
    gpu = vector(capture("a100-mig_ub20-a100-k8s.prom"), "10.0.0.7:9400", "dcgm")
    gauges, rates = _host("10.0.0.7:9100", "ub20-a100-k8s")
    client = _Recorded(_answers(gpu, gauges, rates))
    transport = PrometheusTransport("http://prom:9090", interval_s=5, client=client)  # type: ignore[arg-type]
    fleet = FleetState([], engine=build_engine())
    for _ in range(2):
        transport.deliver(await transport.refresh(), fleet)
    # 3 + the facts and drives queries on the first refresh, 3 on the second (the facts are a
    # minute old)
    assert client.queries == 8 and transport.names == ["ub20-a100-k8s"]
    node = fleet.nodes["ub20-a100-k8s"]
    assert node.status == st.OK and node.interval_s == 5
    assert node.sample.gpus[0].temperature_c == 61
    notes = [e.message for e in node.timeline if e.kind == "source-note"]
    assert (
        len(notes) == 1 and "one reading every 5 s" in notes[0] and "loader_starvation" in notes[0]
    )
    # The capture has no DCGM_FI_DEV_GPU_UTIL: the starvation rule is n/a, not silently "fine".
    assert "loader_starvation" in node.rules_na[0]


def test_starvation_on_five_second_readings_says_how_coarse_its_signal_was():
    """A Prometheus source feeds one utilisation value per refresh: the alert names that rate."""
    fleet = FleetState(["gpu01"], engine=build_engine(), clock=lambda: clock[0])
    clock = [1000.0]
    fleet.on_hello("gpu01", NodeFacts(hostname="gpu01"), 5.0)
    fleet.on_status("gpu01", st.OK)
    for i in range(60):  # 300 s: a dip to 0 % every third reading (every 15 s)
        util = 0 if i % 3 == 0 else 97
        gpu = busy_gpu(
            0,
            utilization_percent=util,
            utilization_samples_percent=[],
            utilization_sample_period_ms=None,
        )
        fleet.on_sample("gpu01", Sample.from_dict({"time": clock[0], "gpus": [gpu]}))
        fleet.tick()
        clock[0] += 5.0
    alert = fleet.nodes["gpu01"].alerts.get(("loader_starvation", 0))
    assert alert is not None, fleet.nodes["gpu01"].alerts
    assert "GPU starved 33 % of the time, dips every ~15 s" in alert.message
    assert "(8 dips in 120 s) (one reading every 5 s) for " in alert.message
    assert alert.evidence["sub_second"] is False


async def test_a_node_down_from_the_start_is_listed_once_and_unreachable_with_the_reason():
    """gpu09's node_exporter is down (only its ``up`` 0 is left, in the job that serves gpu01):
    a node, unreachable. Prometheus scraping itself is up, and no node."""
    gauges, _ = _host("10.0.0.1:9100", "gpu01")
    gauges += [
        {"metric": {"__name__": "up", "instance": "10.0.0.9:9100", "job": "node"}, "value": [1.0, "0"]},
        {"metric": {"__name__": "up", "instance": "prom:9090", "job": "prometheus"}, "value": [1.0, "1"]},
    ]
    client = _Recorded(_answers([], gauges))
    transport = PrometheusTransport("http://prom:9090", interval_s=5, client=client)  # type: ignore[arg-type]
    fleet = FleetState([], engine=build_engine())
    for _ in range(3):
        await transport.deliver_in_batches(await transport.refresh(), fleet)
    assert transport.names == ["10.0.0.9", "gpu01"]
    node = fleet.nodes["10.0.0.9"]
    assert node.status == st.UNREACHABLE and node.reason == "Prometheus cannot scrape 10.0.0.9:9100 (up == 0)"
    assert fleet.nodes["gpu01"].status == st.OK


@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": ")])
def test_an_answer_decoded_in_pieces_is_the_answer(monkeypatch, separators):
    """Cut where a series starts, never inside a value: here label values that spell the cut,
    an escaped quote, a warning after the data, compact (as Prometheus writes) and spaced."""
    monkeypatch.setattr(client_module, "PIECE_CHARS", 200)
    series = vector(capture("a100-mig_ub20-a100-k8s.prom"), "10.0.0.7:9400", "dcgm") * 20
    series[3]["metric"]["pod"] = '},{"metric":{"x":"y"}},{"metric": a "quoted" ]'
    body = {
        "status": "success",
        "data": {"resultType": "vector", "result": series},
        "warnings": ["a ] and a }"],
    }
    text = json.dumps(body, separators=separators)
    assert len(text) > 20 * client_module.PIECE_CHARS  # many pieces
    assert client_module.loads_in_pieces(text) == body
    monkeypatch.setattr(client_module, "PIECE_CHARS", 10)
    empty = {"status": "success", "data": {"resultType": "vector", "result": []}}
    assert client_module.loads_in_pieces(json.dumps(empty, separators=separators)) == empty
