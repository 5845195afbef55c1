"""Hardware health rules: ECC, row remapping, PCIe, lost GPUs, persistence mode."""

from dltui import snapshot
from dltui.core.models import GpuFacts, NodeFacts
from tests.unit.rules_support import Rig, busy_gpu, capture


def one(**values):
    return lambda t: [busy_gpu(0, **values)]


def test_the_p100s_lifetime_ecc_count_shows_as_info_and_is_not_a_fault():
    """The counts of netdata's Tesla P100 ``-q -x`` capture (GPL-3.0, so not copied into the
    project: its ``ecc_errors`` read aggregate single_bit 3, double_bit 0, volatile 0, no
    pending retirement): 3 corrected single-bit errors in its lifetime, none since the last
    reset."""
    p100 = busy_gpu(
        0,
        name="Tesla P100-PCIE-16GB",
        ecc_corrected_aggregate=3,
        ecc_uncorrected_aggregate=0,
        ecc_corrected_volatile=0,
        ecc_uncorrected_volatile=0,
        retired_pages_pending=False,
        remapped_rows_pending=None,
        remapped_rows_failure=None,
        temperature_c=38,
        temperature_margin_c=None,
        memory_temperature_c=None,
    )
    rig = Rig()
    rig.run(10, [p100])
    assert set(rig.alerts()) == {("ecc_lifetime", 0)}
    alert = rig.alert("ecc_lifetime")
    assert alert.severity == "info"
    assert alert.message == (
        "lifetime ECC counts: 3 corrected, 0 uncorrected (aggregate, kept across resets) for 5.0s"
        " — history, not a current fault: alerts follow new errors"
    )
    assert snapshot.exit_code(rig.fleet) == 0


def test_new_uncorrectable_errors_are_critical_until_a_reset_brings_volatile_back_to_zero():
    rig = Rig()
    rig.run(10, one(ecc_uncorrected_volatile=2, ecc_uncorrected_aggregate=7))  # from before we watched
    assert rig.alert("ecc_uncorrectable") is None
    rig.run(5, one(ecc_uncorrected_volatile=3, ecc_uncorrected_aggregate=8))
    alert = rig.alert("ecc_uncorrectable")
    assert alert.severity == "critical"
    assert alert.message == (
        "1 new uncorrectable ECC error (volatile 3, lifetime 8) — drain the node, reset the GPU and run diagnostics (dcgmi diag -r 3)"
    )
    rig.run(600, one(ecc_uncorrected_volatile=3, ecc_uncorrected_aggregate=8))
    assert rig.alert("ecc_uncorrectable") is not None
    rig.run(5, one(ecc_uncorrected_volatile=0, ecc_uncorrected_aggregate=8))
    assert rig.alert("ecc_uncorrectable") is None


def test_a_burst_of_corrected_errors_within_an_hour_warns():
    rig = Rig()
    rig.run(600, lambda t: [busy_gpu(0, ecc_corrected_volatile=int(t // 5) * 2)])  # 240 in 10 min
    alert = rig.alert("ecc_correctable_burst")
    assert alert.severity == "warning"
    assert alert.message.startswith("238 corrected ECC errors in the last hour (more than 100)")
    slow = Rig()
    slow.run(600, lambda t: [busy_gpu(0, ecc_corrected_volatile=int(t // 60))])  # 10 in 10 min
    assert slow.alert("ecc_correctable_burst") is None


def test_the_a10s_pending_row_remap_asks_for_a_reset():
    facts, gpus = capture("a10_535.129.03_q.txt")
    rig = Rig(facts=facts)
    rig.run(1, gpus)
    alert = rig.alert("row_remap_pending")
    assert (alert.severity, alert.message) == ("warning", "row remap pending — reset the GPU to apply it (drain the node first)")
    rig.run(10, lambda t: [dict(gpus[0], remapped_rows_pending=False)])
    assert rig.alert("row_remap_pending") is None


def test_a_failed_row_remap_never_clears_by_itself():
    rig = Rig()
    rig.run(1, one(remapped_rows_failure=True))
    assert rig.alert("row_remap_failure").severity == "critical"
    rig.run(3600, one(remapped_rows_failure=False))
    assert rig.alert("row_remap_failure").message.startswith("row remapping failed: no spare rows left")


def test_a_pcie_link_below_its_maximum_under_load_is_degraded_but_idle_links_train_down():
    facts, gpus = capture("titan-v_560.35.03_q.txt")  # gen 1 of 3 at P8, idle: normal
    idle = Rig(facts=facts)
    idle.run(60, gpus)
    assert idle.alert("pcie_degraded") is None
    rig = Rig()
    rig.run(11, one(pcie_gen=3, pcie_width=8))
    assert rig.alert("pcie_degraded").message.startswith(
        "PCIe link at gen 3 x8, below the gen 5 x16 this slot allows, at 97 % load for 10s"
    )


def test_a_slot_slower_than_the_gpu_is_info_once_facts_arrive():
    rig = Rig(facts=NodeFacts(gpus=[GpuFacts(0, pcie_gpu_max_gen=5, pcie_host_max_gen=4, persistence_mode=True)]))
    rig.fleet.tick()
    alert = rig.alert("pcie_host_limited")
    assert (alert.severity, alert.message) == (
        "info",
        "the slot allows PCIe gen 4, the GPU could run gen 5 — a slot or BIOS limit, not a fault",
    )


def test_rising_pcie_replays_warn_and_lifetime_replays_do_not():
    rig = Rig()  # 67 replays since reset, as the 8×H100 capture shows
    rig.run(20, one(pcie_replay_count=67))
    assert rig.alert("pcie_replays") is None
    rig.run(5, one(pcie_replay_count=70))
    assert rig.alert("pcie_replays").message == (
        "PCIe replays +3 (70 since reset) — link errors being retried: reseat the card or riser, check the slot"
    )
    rig.run(605, one(pcie_replay_count=70))
    assert rig.alert("pcie_replays") is None


def test_a_gpu_that_vanishes_or_is_lost_is_critical_after_two_polls_and_clears_when_back():
    facts = NodeFacts(gpus=[GpuFacts(i, name="NVIDIA H100 80GB HBM3", uuid=f"GPU-0000000{i}", bus_id=f"00000000:{0x19 + i:02X}:00.0") for i in range(4)])
    rig = Rig(facts=facts)
    all_four = [busy_gpu(i) for i in range(4)]
    rig.run(5, all_four)
    rig.run(1, all_four[:3])
    assert rig.alerts() == {}
    rig.run(1, all_four[:3])
    alert = rig.alert("gpu_missing", 3)
    assert alert.message == (
        "GPU missing from the readings (NVIDIA H100 80GB HBM3, 00000000:1C:00.0) for 1.0s — power-cycle the node;"
        " check riser, seating and PSU; look for XID 79 in the timeline"
    )
    lost = [*all_four[:2], busy_gpu(2, error="GPU is lost (fell off the bus?)", utilization_percent=None), all_four[3]]
    rig.run(2, lost)
    assert rig.alert("gpu_missing", 2).message.startswith("GPU cannot be read: GPU is lost (fell off the bus?) (NVIDIA H100")
    assert rig.alert("gpu_missing", 3) is None
    rig.run(1, all_four)
    assert rig.alerts() == {}


def test_expected_gpus_from_the_config_counts_gpus_the_facts_never_listed():
    from dltui.config import Config

    rig = Rig(cfg=Config(rules={"gpu_missing": {"expected_gpus": 8}}))
    rig.run(2, [busy_gpu(i) for i in range(7)])
    assert rig.alert("gpu_missing", None).message.startswith("7 of the 8 expected GPUs are readable")


def test_persistence_mode_off_is_a_warning_at_connect():
    facts, _ = capture("titan-v_560.35.03_q.txt")
    rig = Rig(facts=facts)
    rig.fleet.tick()
    alert = rig.alert("persistence_off")
    assert alert.severity == "warning"
    assert alert.message.startswith("persistence mode is off: each nvidia-smi start re-initialises the GPU")
