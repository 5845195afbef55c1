"""AMD and Gaudi GPUs under the rules: limits are the vendor's own (the real ``amd-smi static``
MI210 capture's slowdown/shutdown section), messages and next steps in the vendor's words,
and a signal the vendor does not report is n/a, never a clear 0."""

from __future__ import annotations

import json
from pathlib import Path

from dltui.config import parse
from dltui.core.models import NodeFacts
from dltui.node.probe import amd_json, gaudi
from dltui.node.probe.smi import parse_query_csv
from tests.unit.rules_support import Rig

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _load(name: str):
    return json.loads((FIXTURES / "amd" / name).read_text())


def mi210_facts() -> NodeFacts:
    return NodeFacts.from_dict({"hostname": "mi210", "gpus": amd_json.static_facts(_load("amd-smi-static-mi210.json"))})


def mi210(**values) -> dict:
    """The derived 26.x metric document's MI210 (hot, throttled), ``values`` overriding."""
    (record,) = amd_json.metric_records(_load("derived_amd-smi-metric-mi210_26x-gpu-data.json"))
    record.update(name="AMD Instinct MI210", power_limit_w=300.0, **values)
    return record


def test_junction_near_amds_own_slowdown_limit_warns_then_goes_critical_in_amds_words():
    rig = Rig(facts=mi210_facts())
    rig.run(40, [mi210(hotspot_temperature_c=97.0, throttled=False)])
    alert = rig.alert("vendor_temp_limit")
    assert alert is not None and alert.severity == "warning"
    assert alert.message.startswith("junction (hotspot) 97 °C, 3 °C below the slowdown limit for ")
    assert "AMD slows clocks at 100 °C and shuts the GPU down at 105 °C" in alert.message
    assert alert.message.endswith("`amd-smi metric --temperature` shows every sensor")
    rig.run(40, [mi210(hotspot_temperature_c=101.0, throttled=False)])
    assert rig.alert("vendor_temp_limit").severity == "critical"
    assert "nvidia" not in rig.alert("vendor_temp_limit").message.lower()


def test_amd_throttle_status_alerts_and_no_nvidia_only_rule_judges_the_amd_gpu():
    rig = Rig(facts=mi210_facts())
    rig.run(20, [mi210()])
    alert = rig.alert("vendor_throttled")
    assert alert is not None and alert.severity == "warning"
    assert alert.message.startswith("AMD reports the GPU throttled for ")
    assert "power 287 of 300 W, junction 88 °C" in alert.message
    assert "`amd-smi metric --throttle` names the limit" in alert.message
    # NVIDIA's concepts (Rule.vendors): not judged on an AMD GPU, and not listed as n/a either
    # (an AMD node is not told NVIDIA's clock-event reasons are missing)
    for rule in ("hw_slowdown", "thermal_margin_low", "power_capped", "clock_sag", "thermal_slowdown"):
        assert rig.alert(rule) is None
        assert rule not in rig.node().rules_na.get(0, set()), rule


def test_amd_concepts_are_not_listed_as_missing_on_an_nvidia_gpu():
    rig = Rig(facts=NodeFacts(hostname="h100"))
    rig.run(5, [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "temperature_c": 60.0, "utilization_percent": 50.0}])
    missing = rig.node().rules_na.get(0, set())
    assert not missing & {"xgmi_errors", "vendor_temp_limit", "vendor_throttled", "power_at_cap"}, missing
    assert "hw_slowdown" in missing  # NVIDIA's own, unreported here: n/a, as ever


def test_amd_ecc_next_step_names_amds_diagnostics_and_pcie_replays_rise():
    rig = Rig(facts=mi210_facts())
    rig.run(5, [mi210(ecc_uncorrected_volatile=0)])
    rig.run(5, [mi210(ecc_uncorrected_volatile=1, pcie_replay_count=9)])
    ecc = rig.alert("ecc_uncorrectable")
    assert ecc is not None and "ROCm Validation Suite" in ecc.message and "dcgmi" not in ecc.message
    assert rig.alert("pcie_replays") is not None


def test_xgmi_errors_rising_on_the_derived_mi300x_is_critical():
    records = amd_json.metric_records(_load("derived_amd-smi-metric-mi300x-x2_rocm6-list.json"))
    rig = Rig(facts=NodeFacts(hostname="mi300x"))
    rig.run(5, [dict(r, name="AMD Instinct MI300X") for r in records])
    assert rig.alert("xgmi_errors", 1) is None
    records[1]["xgmi_errors_total"] = 6
    rig.run(2, [dict(r, name="AMD Instinct MI300X") for r in records])
    alert = rig.alert("xgmi_errors", 1)
    assert alert is not None and alert.severity == "critical"
    assert alert.message.startswith("XGMI link errors +6 (6 since the driver loaded)")
    assert rig.alert("xgmi_errors", 0) is None


def test_gaudi_aip_temperature_is_named_as_gaudi_names_it_and_power_at_cap_is_info():
    rows = parse_query_csv((FIXTURES / "gaudi" / "hl-smi-query-hl325l.csv").read_text(), gaudi.LOOP_FIELDS).rows
    records = [gaudi.record_from_row(row) for row in rows]
    records[1].update(temperature_c=92.0, power_w=845.0, utilization_percent=99.0)
    rig = Rig(facts=NodeFacts(hostname="gaudi"))
    rig.run(70, records)
    hot = rig.alert("gpu_temp_high", 1)
    assert hot is not None and hot.message.startswith("AIP 92 °C ≥ 90 °C for ")
    assert "Intel Gaudi reports no T.Limit margin, so the AIP temperature is judged here" in hot.message
    capped = rig.alert("power_at_cap", 1)
    assert capped is not None and capped.severity == "info"
    assert capped.message.startswith("holding power at the cap: 845 of 850 W at 99 % utilisation")
    assert rig.alert("gpu_temp_high", 0) is None and rig.alert("power_at_cap", 0) is None


def test_amdgpu_driver_drift_between_nodes_with_the_same_model():
    cfg = parse({"groups": {"mi": {"hosts": ["a", "b", "c"]}}})
    rig = Rig(names=("a", "b", "c"), cfg=cfg, facts=mi210_facts())
    odd = mi210_facts()
    odd.gpus[0].driver_version = "6.8.5"
    rig.hello("c", odd)
    rig.fleet.tick()
    alert = rig.alert("accelerator_stack_drift", None, name="c")
    assert alert is not None
    assert alert.message.startswith(
        "AMD Instinct MI210: amdgpu 6.8.5 differs from group mi's amdgpu kernel 6.14.0-24-generic (on 2 of 3 nodes)"
    )
    assert rig.alert("accelerator_stack_drift", None, name="a") is None


def test_a_lost_amd_gpu_points_at_the_amdgpu_kernel_log_not_at_xids():
    rig = Rig(facts=mi210_facts())
    rig.run(3, [mi210()])
    rig.run(3, [dict(mi210(), error="amd-smi metric failed (exit 1): AMDSMI_STATUS_INIT_ERROR")])
    alert = rig.alert("gpu_missing")
    assert alert is not None and alert.severity == "critical"
    assert "journalctl -k | grep amdgpu" in alert.message and "XID" not in alert.message


def test_a_spinning_gaudi_names_its_own_collective_library():
    rig = Rig(facts=NodeFacts(hostname="gaudi3"))
    aip = {"index": 0, "name": "HL-325L", "vendor": "intel", "utilization_percent": 97.0, "power_w": 226.0,
           "power_limit_w": 850.0}
    rig.run(400, [aip])
    alert = rig.alert("job_spin_stall")
    assert alert is not None and "(HCCL)" in alert.message and "NCCL)" not in alert.message.replace("HCCL)", "")
