"""The source's query shapes against a real Prometheus: a refresh's GPU answer carries only the
labels that tell readings apart (the metric name kept through ``max by``), the GPUs' facts come
from a query of their own (first refresh, every FACTS_EVERY_S, and at once for a GPU that shows
up), both spellings of dcgm-exporter's host label join, MIG instances stay out, and a series
Prometheus does not hold is n/a.

Scrape targets: loopback endpoints serving the real dcgm-exporter captures of
tests/fixtures/dcgm-exporter. Changed here, and said where: the host label's value; on one
node the label spelled ``hostname`` with the facts labels a current dcgm-exporter adds
(``modelName``, ``pci_bus_id``, ``DCGM_FI_DRIVER_VERSION``); the MIG instance's XID gauge set
to 43; and later a second GPU, copied from the first with its own UUID."""

from __future__ import annotations

import re

import pytest

from dltui.core.state import FleetState
from dltui.transport.prometheus import Client, PrometheusTransport, queries
from dltui.transport.prometheus.queries import FACTS_EVERY_S

from .promtext import capture
from .tools import Endpoint, start_prometheus, wait_query

pytestmark = pytest.mark.oldest_python_only  # a real Prometheus: test_prometheus_e2e is the newest Python's smoke

A100 = capture("a100-mig_ub20-a100-k8s.prom")
UUID0 = "GPU-34319582-d595-d1c7-d1d2-179bcfa61660"
UUID1 = "GPU-00000000-1111-2222-3333-444444444444"
NEW_LABELS = (
    'hostname="gpu-new",modelName="NVIDIA A100-SXM4-40GB",'
    'pci_bus_id="00000000:07:00.0",DCGM_FI_DRIVER_VERSION="570.124.06"'
)


def _old_spelling(host: str) -> str:
    page = A100.replace('Hostname="ub20-a100-k8s"', f'Hostname="{host}"')
    # The MIG instance's XID gauge, 0 in the capture: 43 here, so that a MIG series reaching
    # the answer would show (max by would fold it into the whole GPU's XID).
    return re.sub(r'(DCGM_FI_DEV_XID_ERRORS\{[^}]*GPU_I_ID="13"[^}]*\}) 0', r"\1 43", page)


def _with_second_gpu(page: str) -> str:
    """GPU 1: each whole-GPU line of GPU 0 again, right after it, with its own UUID."""
    out = []
    for line in page.splitlines():
        out.append(line)
        if line.startswith("DCGM_") and "GPU_I_ID" not in line:
            out.append(
                line.replace('gpu="0"', 'gpu="1"')
                .replace(UUID0, UUID1)
                .replace('device="nvidia0"', 'device="nvidia1"')
            )
    return "\n".join(out) + "\n"


class CountingClient(Client):
    """The real HTTP client, noting which of the source's queries each refresh asked."""

    def __init__(self, url: str):
        super().__init__(url)
        self.by_text = {text: key for key, text in queries().items()}
        self.asked: list[str] = []

    async def query(self, promql: str):
        self.asked.append(self.by_text[promql])
        return await super().query(promql)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    old = Endpoint(_old_spelling("gpu-old"))
    new = Endpoint(A100.replace('Hostname="ub20-a100-k8s"', NEW_LABELS))
    quickstart = Endpoint(capture("readme-quickstart.prom"))  # no host label at all
    prom = None
    try:
        prom, url = start_prometheus(
            tmp_path_factory.mktemp("prom-queries"),
            {"dcgm": [old.address, new.address, quickstart.address]},
        )
        wait_query(url, "count by (instance) (DCGM_FI_DEV_SM_CLOCK)", lambda r: len(r) == 3)
        yield url, old, quickstart
    finally:
        if prom is not None:
            prom.stop()
        for endpoint in (old, new, quickstart):
            endpoint.close()


async def test_a_refresh_asks_only_the_labels_that_tell_readings_apart(lab):
    url, _, _ = lab
    client = Client(url)
    gpu = (await client.query(queries()["gpu"]))["result"]
    assert {s["metric"]["__name__"] for s in gpu} >= {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED"}
    for s in gpu:
        assert set(s["metric"]) <= {"__name__", "instance", "Hostname", "hostname", "gpu"}
    xids = [s for s in gpu if s["metric"]["__name__"] == "DCGM_FI_DEV_XID_ERRORS"]
    assert sorted(s["value"][1] for s in xids) == ["0", "0"]  # the MIG instance's 43 stayed out
    facts = (await client.query(queries()["gpu_facts"]))["result"]
    assert len(facts) == 3  # one series per GPU, not per reading
    (new,) = [s["metric"] for s in facts if s["metric"].get("hostname") == "gpu-new"]
    assert (new["UUID"], new["modelName"], new["DCGM_FI_DRIVER_VERSION"]) == (
        UUID0,
        "NVIDIA A100-SXM4-40GB",
        "570.124.06",
    )


async def test_both_host_label_spellings_facts_from_their_own_query_and_absent_is_na(lab):
    url, _, quickstart = lab
    client = CountingClient(url)
    transport = PrometheusTransport(url, interval_s=5, client=client)
    fleet = FleetState([])
    await transport.update(fleet)
    assert client.asked == ["gpu", "host", "rates", "gpu_facts", "smartctl"]
    host = quickstart.address.split(":")[0]  # no host label: the instance's host part
    assert sorted(fleet.nodes) == sorted(["gpu-new", "gpu-old", host])
    old, new = fleet.nodes["gpu-old"], fleet.nodes["gpu-new"]
    (g,) = old.sample.gpus
    assert (g.uuid, g.temperature_c, g.power_w, g.memory_total_mib) == (UUID0, 61, 409.692, 40535)
    assert g.utilization_percent is None  # no DCGM_FI_DEV_GPU_UTIL in the capture: n/a, not 0
    assert g.name is None  # no modelName label on this exporter: n/a
    (g,) = new.sample.gpus
    assert (g.uuid, g.name, g.temperature_c) == (UUID0, "NVIDIA A100-SXM4-40GB", 61)
    assert new.facts.driver_version == "570.124.06"
    assert new.facts.gpus[0].bus_id == "00000000:07:00.0"
    (q,) = fleet.nodes[host].sample.gpus
    assert q.sm_clock_mhz == 139 and q.memory_temperature_c is None  # DCGM's "not supported"
    assert not [e for e in old.timeline if e.kind == "xid"]  # the MIG instance's 43 stayed out


async def test_facts_are_asked_again_after_a_minute_and_at_once_for_a_new_gpu(lab):
    url, old, _ = lab
    client = CountingClient(url)
    transport = PrometheusTransport(url, interval_s=5, client=client)
    now = [1000.0]
    transport.clock = lambda: now[0]
    fleet = FleetState([])
    await transport.update(fleet)
    client.asked.clear()
    await transport.update(fleet)
    assert client.asked == ["gpu", "host", "rates"]  # the facts are not a minute old yet
    now[0] += FACTS_EVERY_S
    client.asked.clear()
    await transport.update(fleet)
    assert client.asked == ["gpu", "host", "rates", "gpu_facts", "smartctl"]

    old.body = _with_second_gpu(old.body)
    try:
        wait_query(url, 'DCGM_FI_DEV_GPU_TEMP{Hostname="gpu-old"}', lambda r: len(r) == 2)
        client.asked.clear()
        await transport.update(fleet)
        # not due by the clock, yet asked in the same refresh: GPU 1 arrives with its UUID
        assert client.asked == ["gpu", "host", "rates", "gpu_facts"]
        gpus = fleet.nodes["gpu-old"].sample.gpus
        assert [(g.index, g.uuid) for g in gpus] == [(0, UUID0), (1, UUID1)]
        assert [g.uuid for g in fleet.nodes["gpu-old"].facts.gpus] == [UUID0, UUID1]
        changes = [e.message for e in fleet.nodes["gpu-old"].timeline if "changed" in e.message]
        assert changes == ["GPU count changed: 1 -> 2"]
        client.asked.clear()
        await transport.update(fleet)
        assert client.asked == ["gpu", "host", "rates"]
    finally:
        old.body = _old_spelling("gpu-old")
