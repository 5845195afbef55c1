"""Fleet rules: versions and GPU models that differ between nodes that should match."""

from dltui.config import parse
from dltui.core.models import GpuFacts, NodeFacts
from tests.unit.rules_support import Rig

NODES = tuple(f"gpu0{i}" for i in range(1, 7))


def facts(driver="535.161.08", cuda="12.2", kernel="5.15.0-105-generic", model="NVIDIA H100 80GB HBM3"):
    return NodeFacts(driver_version=driver, cuda_version=cuda, kernel=kernel, gpus=[GpuFacts(i, name=model) for i in range(8)])


def test_one_node_on_another_driver_is_told_so_and_the_rest_are_not():
    rig = Rig(names=NODES, facts=facts())
    rig.hello("gpu04", facts(driver="550.90.07", cuda="12.4"))
    rig.fleet.tick()
    alerts = {name: sorted(rig.alerts(name)) for name in NODES}
    assert alerts == {name: [] for name in NODES if name != "gpu04"} | {
        "gpu04": [("cuda_version_drift", None), ("driver_version_drift", None)]
    }
    alert = rig.alert("driver_version_drift", None, name="gpu04")
    assert (alert.severity, alert.message) == (
        "warning",
        "driver 550.90.07 differs from the fleet's 535.161.08 (on 5 of 6 nodes) — lock versions across nodes"
        " that run the same jobs; a reboot may have picked up an upgrade",
    )
    assert rig.alert("cuda_version_drift", None, name="gpu04").message.startswith("CUDA 12.4 differs from the fleet's 12.2")
    rig.hello("gpu04", facts())  # upgraded back
    rig.fleet.tick()
    assert all(rig.alerts(name) == {} for name in NODES)


def test_a_reconnect_that_repeats_its_facts_leaves_the_fleet_unjudged(monkeypatch):
    """The fleet rules compare every node's facts: a fleet of thousands is judged again when a
    node's facts changed, not on every reconnect's hello that repeats them."""
    rig = Rig(names=NODES, facts=facts())
    rig.fleet.tick()
    engine = rig.fleet.engine
    judged = []
    real = engine._judge_fleet
    monkeypatch.setattr(engine, "_judge_fleet", lambda *a: judged.append(a) or real(*a))
    rig.hello("gpu04", facts())  # reconnected, same node
    rig.fleet.tick()
    assert judged == []
    rig.hello("gpu04", facts(driver="550.90.07"))  # rebooted into an upgrade
    rig.fleet.tick()
    assert len(judged) == 1
    assert rig.alert("driver_version_drift", None, name="gpu04") is not None


def test_groups_are_compared_within_themselves():
    cfg = parse({"groups": {"train": {"hosts": ["gpu0[1-3]"]}, "infer": {"hosts": ["gpu0[4-6]"]}}})
    rig = Rig(names=NODES, cfg=cfg, facts=facts())
    for name in ("gpu04", "gpu05", "gpu06"):
        rig.hello(name, facts(driver="550.90.07", kernel="6.8.0-40-generic", model="NVIDIA L40S"))
    rig.fleet.tick()
    assert all(rig.alerts(name) == {} for name in NODES)
    rig.hello("gpu02", facts(kernel="5.15.0-107-generic"))
    rig.hello("gpu06", facts(driver="550.90.07", kernel="6.8.0-40-generic", model="NVIDIA H100 80GB HBM3"))
    rig.fleet.tick()
    assert rig.alert("kernel_version_drift", None, name="gpu02").message.startswith(
        "kernel 5.15.0-107-generic differs from group train's 5.15.0-105-generic (on 2 of 3 nodes)"
    )
    assert rig.alert("gpu_model_mixed", None, name="gpu06").message.startswith(
        "GPU model NVIDIA H100 80GB HBM3 differs from group infer's NVIDIA L40S (on 2 of 3 nodes)"
    )
    assert sorted(k for name in NODES for k in rig.alerts(name)) == [("gpu_model_mixed", None), ("kernel_version_drift", None)]


def test_gpu_models_are_not_compared_across_an_ungrouped_fleet():
    rig = Rig(names=("gpu01", "ws01"), facts=facts())
    rig.hello("ws01", facts(model="NVIDIA GeForce RTX 4090"))
    rig.fleet.tick()
    assert rig.alerts("gpu01") == rig.alerts("ws01") == {}
