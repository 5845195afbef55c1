"""AMD's own stressor (the ROCm Validation Suite's gst) and the vendor checks of a burn-in on
AMD and Intel Gaudi GPUs: the real rvs output AMD publishes (8x MI355X, abridged by AMD: only
GPUs 0, 1, 6 and 7 have their final line), variants derived from it in the test (named so),
and synthetic telemetry as the probe reports it for each vendor."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from dltui.burnin import verdict as v
from dltui.core.models import GpuFacts, NodeFacts, Sample
from dltui.node.burnin import rvs
from tests.unit.test_burnin_verdict import T0, _gpu

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "burn-in"
RVS_LOG = (FIX / "rvs-1.6.75_gst_mi355x.log").read_text()


def test_real_rvs_gst_output_maps_rvs_ids_to_amdgpu_indexes_by_its_summary():
    res = rvs.parse_rvs(RVS_LOG)
    assert res.index_of == {42583: 0, 27226: 1, 36479: 2, 17010: 3, 1590: 4, 51771: 5,
                            11806: 6, 57875: 7}
    assert res.names[42583] == "AMD Instinct MI355X"
    assert res.actions == {"gst-Tflops-2K2K2K-trig-fp4": "PASS"}
    by_index = res.by_index()
    assert sorted(i for i, g in by_index.items() if g.met) == [0, 1, 6, 7]
    assert by_index[0].final == 1063560 and by_index[0].target == 0
    assert by_index[0].gflops == [536870, 1059931, 1055687, 1056873, 1063560]
    assert by_index[2].met is None and by_index[2].gflops == [554189]  # AMD cut the rest


def test_rvs_conf_is_amds_stress_action_for_the_runs_duration():
    conf = rvs.gst_conf(7200)
    assert "module: gst" in conf and "parallel: true" in conf and "device: all" in conf
    assert "duration: 7200000" in conf and "target_stress: 2000" in conf


def _amd_run(gpus=2, tool="rvs", log=RVS_LOG, vendor="amd", tweak=None, seconds=120):
    samples = []
    for t in range(seconds):
        row = [
            _gpu(i, vendor=vendor, throttled=False if vendor == "amd" else None,
                 xgmi_errors_total=0 if vendor == "amd" else None,
                 clock_event_hw_thermal_us=None, clock_event_sw_thermal_us=None,
                 clock_event_hw_power_brake_us=None, temperature_margin_c=None)
            for i in range(gpus)
        ]
        if tweak:
            row = [tweak(t, g) for g in row]
        samples.append(Sample(time=T0 + t, gpus=row))
    result = {
        "phases": {"preflight": [T0 - 5, T0], "load": [T0, T0 + seconds],
                   "post": [T0 + seconds, None]},
        "gpu": {"tool": tool, "exit_code": 0},
    }
    outputs = {"rvs.log": log} if log is not None else {}
    return v.NodeRun("mi01", {"expected_gpus": gpus}, result, samples, [], None, outputs)


def _items(verdict, check):
    return [i for g in verdict.gpus for i in g.items if i.check == check]


def test_healthy_amd_node_passes_on_the_real_rvs_output():
    verdict = v.judge(_amd_run())
    assert verdict.status == v.PASS, [i.to_dict() for i in verdict.problems()]
    stressor = _items(verdict, "stressor")
    assert [i.status for i in stressor] == [v.PASS, v.PASS]
    assert stressor[0].evidence == "rvs gst met its target: 1063560 GFLOPS (no GFLOPS target set)"
    checks = {i.check for i in verdict.gpus[0].items}
    assert checks >= {"stressor", "answering", "ecc", "xgmi", "throttle", "thermal", "power",
                      "pcie"}


def test_rvs_target_not_met_fails_that_gpu_derived_met_false():
    derived = RVS_LOG.replace(
        "[GPU:: 27226] GFLOPS 1068301 Target GFLOPS: 0 met: TRUE",
        "[GPU:: 27226] GFLOPS 1068301 Target GFLOPS: 2000000 met: FALSE",
    )
    verdict = v.judge(_amd_run(log=derived))
    bad = [i for i in verdict.problems() if i.status == v.FAIL]
    assert [(i.gpu, i.check) for i in bad] == [(1, "stressor")]
    assert bad[0].evidence == "rvs gst: 1068301 GFLOPS, target 2000000 not met"
    assert v.exit_code([verdict]) == 2


def test_a_gpu_rvs_gave_no_final_line_fails_never_passes_real_abridged_capture():
    verdict = v.judge(_amd_run(gpus=4))  # GPUs 2 and 3: AMD's "..." holds their lines
    by_gpu = {i.gpu: i for i in _items(verdict, "stressor")}
    assert by_gpu[2].status == v.FAIL and by_gpu[3].status == v.FAIL
    assert by_gpu[2].evidence == "rvs gst gave no result for this GPU"
    assert by_gpu[0].status == v.PASS


def test_rvs_killed_before_any_result_fails_with_its_exit_code():
    run = _amd_run(log="")
    run.result["gpu"]["exit_code"] = 143
    verdict = v.judge(run)
    assert {i.evidence for i in _items(verdict, "stressor")} == {
        "rvs gst gave no result for this GPU, exit code 143"
    }


def test_amd_counters_compared_over_the_run_xgmi_ras_ecc_pcie_replays():
    def worse(t, g):
        if t < 60:
            return g
        return replace(g, xgmi_errors_total=3, ecc_uncorrected_volatile=1 if g.index == 1 else 0,
                       pcie_replay_count=500 if g.index == 0 else 0)

    verdict = v.judge(_amd_run(tweak=worse))
    bad = {(i.gpu, i.check): i for i in verdict.problems() if i.status == v.FAIL}
    assert set(bad) == {(0, "xgmi"), (1, "xgmi"), (1, "ecc"), (0, "pcie")}
    assert bad[(0, "xgmi")].evidence == "XGMI link errors +3 during the run"
    assert bad[(1, "ecc")].evidence == "uncorrectable ECC +1"
    assert bad[(0, "pcie")].evidence == "500 PCIe replays during the run"


def test_amd_throttle_status_under_load_is_a_warning_with_amds_next_step():
    verdict = v.judge(_amd_run(tweak=lambda t, g: replace(g, throttled=t >= 100 and g.index == 0)))
    (item,) = [i for i in verdict.problems() if i.check == "throttle"]
    assert (item.gpu, item.status) == (0, v.WARN)
    assert item.evidence == "AMD reported the GPU throttled in 20 of 120 samples under load"
    assert "amd-smi metric --throttle" in item.next_step


def test_amd_sysfs_source_without_throttle_status_is_not_run_never_pass():
    verdict = v.judge(_amd_run(tweak=lambda t, g: replace(g, throttled=None)))
    assert {i.status for i in _items(verdict, "throttle")} == {v.NOT_RUN}


def _gaudi(t, g):
    return replace(g, pcie_gen=None, pcie_max_gen=None, pcie_width=None, pcie_max_width=None,
                   pcie_replay_count=None, ecc_corrected_volatile=None,
                   ecc_uncorrected_volatile=None, memory_temperature_c=None,
                   sm_clock_mhz=None, sm_clock_max_mhz=None)


def test_gaudi_load_is_not_supported_said_clearly_and_its_hl_smi_checks_run():
    verdict = v.judge(_amd_run(gpus=8, tool=None, log=None, vendor="intel", tweak=_gaudi))
    (count,) = [i for i in verdict.items if i.check == "gpu_count"]
    assert (count.status, count.evidence) == (v.PASS, "8 GPUs")
    stressor = _items(verdict, "stressor")
    assert {i.evidence for i in stressor} == {
        "GPU load is not supported for Intel Gaudi: no stressor dltui can run and judge"
    }
    assert {i.status for i in stressor} == {v.NOT_RUN}
    assert {i.status for i in _items(verdict, "answering")} == {v.PASS}
    assert {i.evidence for i in _items(verdict, "thermal")} == {"AIP max 70 °C"}
    assert {i.evidence for i in _items(verdict, "power")} == {"median 395 W of 400 W under load"}
    assert not _items(verdict, "pcie")  # hl-smi -Q reports no link state: not judged
    assert v.exit_code([verdict]) == 3  # never a pass


def test_gaudi_aip_that_stops_answering_fails_with_hl_smis_words():
    def lost(t, g):
        g = _gaudi(t, g)
        if g.index == 6 and t >= 90:  # the probe's error record: no readings at all
            return replace(g, temperature_c=None, power_w=None, power_limit_w=None,
                           utilization_percent=None,
                           error="hl-smi reports no readings for this AIP (all N/A)")
        return g

    verdict = v.judge(_amd_run(gpus=8, tool=None, log=None, vendor="intel", tweak=lost))
    bad = [i for i in verdict.problems() if i.status == v.FAIL]
    assert [(i.gpu, i.check) for i in bad] == [(6, "answering")]
    assert bad[0].evidence == (
        "AIP stopped answering in 30 of 120 samples under load: "
        "hl-smi reports no readings for this AIP (all N/A)"
    )
    assert "habanalabs" in bad[0].next_step
    assert v.exit_code([verdict]) == 2


def test_gaudi_aip_count_against_expected_fails():
    run = _amd_run(gpus=7, tool=None, log=None, vendor="intel", tweak=_gaudi)
    run = replace(run, plan={"expected_gpus": 8})
    verdict = v.judge(run)
    (count,) = [i for i in verdict.items if i.check == "gpu_count"]
    assert (count.status, count.evidence) == (v.FAIL, "7 GPUs seen, 8 expected")


def test_rvs_gflops_feed_the_sibling_comparison():
    slow = RVS_LOG.replace("[GPU:: 27226] GFLOPS 106", "[GPU:: 27226] GFLOPS 86")
    verdict = v.judge(_amd_run(log=slow))
    (item,) = [i for i in verdict.problems() if i.check == "consistency"]
    assert item.gpu == 1 and item.status == v.FAIL
    assert "Gflop/s vs node median" in item.evidence


def _mi300x(t, g):  # no edge sensor: the junction is its temperature
    return replace(g, temperature_c=None, hotspot_temperature_c=80.0 + (g.index * 16) * (t >= 60))


def test_amd_junction_judged_against_amds_own_slowdown_limit():
    run = _amd_run(tweak=_mi300x)
    facts = NodeFacts(gpus=[GpuFacts(index=i, vendor="amd", hotspot_temperature_slowdown_c=100.0)
                            for i in (0, 1)])
    verdict = v.judge(replace(run, facts=facts))
    thermal = {i.gpu: i for i in _items(verdict, "thermal")}
    assert (thermal[0].status, thermal[0].evidence) == (v.PASS, "junction max 80 °C")
    assert (thermal[1].status, thermal[1].evidence) == (
        v.FAIL, "junction 96 °C, AMD slows clocks at 100 °C"
    )


def test_amd_edge_and_junction_both_said():
    verdict = v.judge(_amd_run(tweak=lambda t, g: replace(g, hotspot_temperature_c=81.0)))
    assert {i.evidence for i in _items(verdict, "thermal")} == {
        "edge max 70 °C, HBM max 75 °C, junction max 81 °C"
    }


def test_amd_replays_without_link_state_are_still_compared():
    def rocm_smi(t, g):
        return replace(g, pcie_gen=None, pcie_max_gen=None, pcie_width=None, pcie_max_width=None,
                       pcie_replay_count=0 if t < 60 or g.index else 12)

    verdict = v.judge(_amd_run(tweak=rocm_smi))
    pcie = {i.gpu: i for i in _items(verdict, "pcie")}
    assert (pcie[0].status, pcie[0].evidence) == (v.WARN, "12 PCIe replays during the run (ideally 0)")
    assert (pcie[1].status, pcie[1].evidence) == (v.PASS, "no PCIe replays (link state not reported)")


def test_rvs_log_read_as_it_grows_gives_what_the_whole_log_gives():
    grown = rvs.RvsResult()
    for start in range(0, len(RVS_LOG), 97):  # pieces that cut lines anywhere
        grown.feed(RVS_LOG[start:start + 97])
    grown.feed("\n")
    whole = rvs.parse_rvs(RVS_LOG)
    assert grown.index_of == whole.index_of and grown.actions == whole.actions
    assert {i: g.to_dict() for i, g in grown.gpus.items()} == {
        i: g.to_dict() for i, g in whole.gpus.items()
    }
