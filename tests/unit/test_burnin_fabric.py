"""The burn-in's fabric items: HCA ports read by the probe's own collector off procfs's real
sysfs capture (made an eight-HCA node by this test: mlx5_0 copied, at 100 Gb/s 4X EDR and
LinkUp), NVLink from Azure's real ``nvidia-smi nvlink -s`` capture (GPU 7's twelve links, on
every GPU) and the derived ``-e`` file; the degraded variants are edits this test makes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dltui.burnin import verdict as v
from dltui.core.models import IbPortSample, NvlinkSample, Sample
from dltui.node.probe.infiniband import InfinibandCollector
from dltui.node.probe.nvlink_smi import parse_errors, parse_status, records
from tests import sysfs_tree

NVLINK = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi-nvlink"
STATUS = (NVLINK / "azurehpc_a100-sxm4-80gb_nvlink-s.txt").read_text()
ERRORS = (NVLINK / "derived_a100-sxm4-80gb_nvlink-e.txt").read_text()
T0 = 1_700_000_000.0


@pytest.fixture
def hcas(tmp_path):
    return sysfs_tree.eight_hcas(tmp_path / "sys")


def links(status=STATUS, errors=ERRORS, gpus=8) -> list[NvlinkSample]:
    one = records(parse_status(status), parse_errors(errors))[0]
    return [NvlinkSample.from_dict(dict(one, gpu=i)) for i in range(gpus)]


def ports(root) -> list[IbPortSample]:
    return [IbPortSample(**r) for r in InfinibandCollector(str(root)).sample()]


def judge(timeline, cfg=None):
    """``timeline``: (seconds from the start, ports, links) readings; the load from 10 s."""
    samples = [Sample(time=T0 + t, ib_ports=p, nvlinks=n) for t, p, n in timeline]
    end = timeline[-1][0]
    result = {"phases": {"preflight": [T0, T0 + 10], "load": [T0 + 10, T0 + end - 10], "post": [T0 + end - 10, None]}}
    run = v.NodeRun("gpu01", {}, result, samples)
    return {i.check: i for i in v.judge(run, v.settings(cfg)).items if i.check in ("ib", "nvlink")}


def test_a_clean_fabric_passes(hcas):
    steady = (ports(hcas), links())
    found = judge([(0, *steady), (600, *steady)])
    assert (found["ib"].status, found["ib"].evidence) == ("pass", "8 HCA ports up at 100 Gb/s, no error counter rose")
    nvlink = found["nvlink"]
    assert (nvlink.status, nvlink.evidence) == ("pass", "8 GPUs × 12 links up, no NVLink error counter rose")


def test_a_port_down_at_preflight_fails_the_node(hcas):
    sysfs_tree.take_down(hcas, "mlx5_2")
    item = judge([(0, ports(hcas), links()), (600, ports(hcas), links())])["ib"]
    assert item.status == "fail"
    assert item.evidence == "HCA port not up at preflight: mlx5_2 DOWN (Polling)"
    assert item.next_step.startswith("reseat or replace the cable/transceiver")


def test_an_ignored_spare_port_does_not(hcas):
    sysfs_tree.take_down(hcas, "mlx5_7")
    found = judge([(0, ports(hcas), links()), (600, ports(hcas), links())], {"ib_ignore_ports": ["mlx5_7"]})
    assert found["ib"].status == "pass"


def test_a_port_that_goes_down_under_load_and_link_downs_fail(hcas):
    before = ports(hcas)
    sysfs_tree.add_to_counter(hcas, "mlx5_4", "link_downed", 3)
    sysfs_tree.add_to_counter(hcas, "mlx5_4", "symbol_error", 900)
    after = ports(hcas)
    item = judge([(0, before, links()), (900, after, links())])["ib"]
    assert item.status == "fail"
    assert item.evidence == "mlx5_4 link downs +3 (0.2/min); mlx5_4 symbol errors +900 (60.0/min) during the run"
    assert item.next_step.startswith("the link flapped under load")
    sysfs_tree.take_down(hcas, "mlx5_5")
    item = judge([(0, before, links()), (300, ports(hcas), links()), (900, ports(hcas), links())])["ib"]
    assert (item.status, item.evidence) == ("fail", "mlx5_5 went DOWN under load")


def test_rising_symbol_errors_alone_warn_with_the_rate(hcas):
    before = ports(hcas)
    sysfs_tree.add_to_counter(hcas, "mlx5_1", "symbol_error", 120)
    item = judge([(0, before, links()), (1200, ports(hcas), links())])["ib"]
    assert (item.status, item.evidence) == ("warn", "mlx5_1 symbol errors +120 (6.0/min) during the run")
    assert item.next_step.startswith("physical layer")


def test_ports_below_the_expected_rate_warn(hcas):
    item = judge([(0, ports(hcas), links()), (600, ports(hcas), links())], {"ib_rate_gbps": 200})["ib"]
    assert item.status == "warn" and item.evidence.startswith("mlx5_0 at 100 Gb/s, 200 expected")


def test_nvlink_not_all_up_at_preflight_fails():
    short = links()
    short[3] = links(STATUS.replace("Link 4: 25 GB/s", "Link 4: <inactive>"))[3]
    item = judge([(0, [], short), (600, [], short)])["nvlink"]
    assert (item.status, item.evidence) == ("fail", "NVLink not all up at preflight: GPU3: 11 of 12 links")


def test_nvlink_lost_under_load_or_recovering_fails_replays_warn():
    down = links()
    down[5] = links(STATUS.replace("Link 0: 25 GB/s", "Link 0: <inactive>"))[5]
    item = judge([(0, [], links()), (300, [], down), (600, [], links())])["nvlink"]
    assert (item.status, item.evidence) == ("fail", "NVLink down during the run: GPU5: 11 of 12 links at 300 s")
    recovering = links(errors=ERRORS.replace("Link 2: Recovery Errors: 0", "Link 2: Recovery Errors: 2"))
    assert judge([(0, [], links()), (600, [], recovering)])["nvlink"].status == "fail"
    replays = links(errors=ERRORS.replace("Link 2: Replay Errors: 0", "Link 2: Replay Errors: 30"))
    item = judge([(0, [], links()), (600, [], replays)])["nvlink"]
    assert item.status == "warn" and item.evidence.startswith("NVLink GPU0: replay errors +30 (3.0/min)")


def test_a_node_without_fabric_gets_no_fabric_item():
    assert judge([(0, [], []), (600, [], [])]) == {}


def test_ib_ignore_ports_must_be_globs():
    from dltui.config import ConfigError

    with pytest.raises(ConfigError, match="ib_ignore_ports"):
        v.settings({"ib_ignore_ports": "mlx5_7"})


class _Samples:
    """The sink a ProbeReader feeds: the run's samples, as the operator's side decodes them."""

    def __init__(self):
        self.samples = []

    def on_sample(self, name, sample):
        self.samples.append(sample)

    def on_hello(self, *args):
        pass

    def on_event(self, *args):
        pass

    def on_status(self, *args):
        pass


def test_the_real_driver_samples_the_fabric_of_its_sysfs_root_fake_smi(tmp_path, hcas):
    """The burn-in driver, started as on a node with ``--sysfs`` (what ``[probe] sysfs`` gives
    it), the eight-HCA tree with mlx5_3 taken down, and a fake nvidia-smi answering ``nvlink``
    from the Azure capture: its samples carry both, and the verdict fails the port."""
    from dltui.transport.protocol import ProbeReader
    from tests.unit.test_burnin_driver import _node, _run

    sysfs_tree.take_down(hcas, "mlx5_3")
    (tmp_path / "node").mkdir()
    env = _node(
        tmp_path / "node",
        8,
        FAKE_SMI_NVLINK_STATUS=str(NVLINK / "azurehpc_a100-sxm4-80gb_nvlink-s.txt"),
        FAKE_SMI_NVLINK_ERRORS=str(NVLINK / "derived_a100-sxm4-80gb_nvlink-e.txt"),
    )
    # --post 5: the probe's first nvidia-smi nvlink poll comes 3 s into the run
    answer, run_dir = _run(env, "fabric1", "--gpu", "none", "--sysfs", str(hcas), "--post", "5")
    assert answer["ok"], answer
    assert json.loads((run_dir / "plan.json").read_text())["sysfs"] == str(hcas)
    sink = _Samples()
    reader = ProbeReader("n", sink)
    for line in (run_dir / "samples.jsonl").read_text().splitlines():
        reader.feed(line)
    assert [p.name for p in sink.samples[0].ib_ports] == [f"mlx5_{i}:1" for i in range(8)]
    assert any(s.nvlinks for s in sink.samples)
    result = json.loads((run_dir / "result.json").read_text())
    run = v.NodeRun("n", json.loads((run_dir / "plan.json").read_text()), result, sink.samples)
    found = {i.check: i for i in v.judge(run).items}
    assert (found["ib"].status, found["ib"].evidence) == ("fail", "HCA port not up at preflight: mlx5_3 DOWN (Polling)")
    assert found["nvlink"].status == "pass"
