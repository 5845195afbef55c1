"""GPUs a node listed in an earlier dltui session and no longer lists: ``gpu_missing``."""

import json

from dltui.core import gpu_inventory
from dltui.core.gpu_inventory import GpuInventory, default_path
from dltui.core.models import GpuFacts, NodeFacts
from tests.unit.rules_support import Rig, busy_gpu

H100 = "NVIDIA H100 80GB HBM3"


def gpu_facts(*indexes):
    return [GpuFacts(i, name=H100, uuid=f"GPU-{i:04d}", bus_id=f"00000000:{0x19 + i:02X}:00.0") for i in indexes]


def session(inventory_path, indexes, hostname="gpu01-real", seconds=3):
    """One dltui session: the node says hello listing these GPUs, then samples for a while."""
    rig = Rig(facts=NodeFacts(hostname=hostname, gpus=gpu_facts(*indexes)), inventory=GpuInventory(inventory_path))
    rig.run(seconds, [busy_gpu(i, uuid=f"GPU-{i:04d}") for i in indexes])
    return rig


def test_the_inventory_lives_in_the_xdg_state_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_path() == tmp_path / "dltui" / "gpu-inventory.json"


def test_a_gpu_gone_since_an_earlier_session_is_critical_and_named(tmp_path):
    path = tmp_path / "inventory.json"
    first = session(path, range(4))
    assert first.alert("gpu_missing", None) is None
    assert sorted(json.loads(path.read_text())["gpu01"]["gpus"]) == ["GPU-0000", "GPU-0001", "GPU-0002", "GPU-0003"]
    second = session(path, (0, 1, 3))  # GPU2 fell off the bus, the node rebooted, dltui restarted
    alert = second.alert("gpu_missing", None)
    assert alert.severity == "critical"
    assert alert.message.startswith(
        "GPU2 GPU-0002 (NVIDIA H100 80GB HBM3, bus 00000000:1B:00.0) is gone (this node listed it until "
    )
    assert alert.message.endswith("if the hardware was changed on purpose, acknowledge (a) to accept it")
    assert alert.evidence["gone"] == ["GPU-0002"]


def test_several_gone_gpus_are_counted_and_each_named(tmp_path):
    path = tmp_path / "inventory.json"
    session(path, range(4))
    message = session(path, (0,)).alert("gpu_missing", None).message
    assert message.startswith("3 GPUs are gone (this node listed them until ")
    assert "): GPU1 GPU-0001 (NVIDIA H100 80GB HBM3, bus 00000000:1A:00.0); GPU2 GPU-0002" in message


def test_acknowledging_forgets_the_gone_gpu_for_good(tmp_path):
    path = tmp_path / "inventory.json"
    session(path, range(2))
    rig = session(path, (0,))
    assert rig.alert("gpu_missing", None) is not None
    rig.fleet.engine.acknowledge(rig.node(), "gpu_missing", None, rig.clock.t)
    rig.run(3, [busy_gpu(0, uuid="GPU-0000")])
    assert rig.alert("gpu_missing", None) is None
    assert list(json.loads(path.read_text())["gpu01"]["gpus"]) == ["GPU-0000"]
    assert session(path, (0,)).alert("gpu_missing", None) is None


def test_another_machine_under_the_same_name_starts_over(tmp_path):
    path = tmp_path / "inventory.json"
    session(path, range(8))
    assert session(path, range(4), hostname="rebuilt-host").alert("gpu_missing", None) is None


def test_a_broken_inventory_is_set_aside_and_an_unwritable_one_costs_only_the_memory(tmp_path):
    path = tmp_path / "inventory.json"
    path.write_text("{ not json")
    inventory = GpuInventory(path)
    assert inventory.nodes == {} and (tmp_path / "inventory.json.corrupt").read_text() == "{ not json"
    assert inventory.reconcile("gpu01", "h", gpu_facts(0)) == []
    (tmp_path / "not-a-dir").write_text("")  # even root cannot make a directory here
    stuck = GpuInventory(tmp_path / "not-a-dir" / "inventory.json")
    assert stuck.reconcile("gpu01", "h", gpu_facts(0, 1)) == []
    assert [k.uuid for k in stuck.reconcile("gpu01", "h", gpu_facts(0))] == ["GPU-0001"]  # remembered in memory


def test_without_an_inventory_nothing_is_remembered(tmp_path):
    rig = Rig(facts=NodeFacts(hostname="h", gpus=gpu_facts(0)))
    rig.run(3, [busy_gpu(0, uuid="GPU-0000")])
    assert rig.fleet.engine.inventory is None and rig.alert("gpu_missing", None) is None


def test_listed_until_stays_within_the_hour_of_the_last_session_that_saw_it(tmp_path):
    path = tmp_path / "inventory.json"
    GpuInventory(path).reconcile("gpu01", "h", gpu_facts(0, 1), now=1000.0)
    GpuInventory(path).reconcile("gpu01", "h", gpu_facts(0, 1), now=1000.0 + 30 * 86400)  # a month later
    (gone,) = GpuInventory(path).reconcile("gpu01", "h", gpu_facts(0), now=1000.0 + 31 * 86400)
    assert gone.last_listed == 1000.0 + 30 * 86400


def test_two_sessions_at_once_keep_each_others_changes(tmp_path):
    path = tmp_path / "inventory.json"
    GpuInventory(path).reconcile("gpu01", "h1", gpu_facts(0, 1))
    first, second = GpuInventory(path), GpuInventory(path)  # both loaded now
    first.reconcile("gpu01", "h1", gpu_facts(0))
    first.forget("gpu01", ["GPU-0001"])  # the operator accepted the change in one session
    second.reconcile("gpu02", "h2", gpu_facts(0, 1, 2))  # the other session meets a new node
    stored = json.loads(path.read_text())
    assert sorted(stored["gpu01"]["gpus"]) == ["GPU-0000"]  # not brought back by the second
    assert sorted(stored["gpu02"]["gpus"]) == ["GPU-0000", "GPU-0001", "GPU-0002"]


def test_nodes_met_together_share_one_file_write(tmp_path, monkeypatch):
    """Two thousand new nodes in one burst: a write per node made the cost grow with the square
    of the fleet (the whole file each time); now the burst is written together, and all of it
    reaches the file."""
    path = tmp_path / "inventory.json"
    inventory = GpuInventory(path)
    writes = []
    real_flush = GpuInventory.flush

    def counting_flush(self):
        if self._pending:
            writes.append(1)
        real_flush(self)

    monkeypatch.setattr(GpuInventory, "flush", counting_flush)
    monkeypatch.setattr(gpu_inventory.time, "monotonic", lambda: 1000.0)  # one instant
    for n in range(2000):
        inventory.reconcile(f"gpu{n:04d}", f"h{n}", gpu_facts(0, 1))
    assert len(writes) == 1  # the first node at once; the rest wait for WRITE_EVERY_S
    inventory.flush()
    assert len(json.loads(path.read_text())) == 2000
