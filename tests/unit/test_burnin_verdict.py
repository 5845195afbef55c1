"""Verdicts on synthetic telemetry with the real gpu_burn capture (and its derived variants)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from dltui.burnin import disk_speed
from dltui.burnin import verdict as v
from dltui.config import ConfigError
from dltui.core.models import GpuSample, NodeEvent, Sample

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "burn-in"
T0 = 1_700_000_000.0


def _gpu(i: int, **kw) -> GpuSample:
    base = dict(
        index=i,
        temperature_c=70.0,
        temperature_margin_c=20.0,
        memory_temperature_c=75.0,
        power_w=395.0,
        power_limit_w=400.0,
        sm_clock_mhz=1410.0,
        sm_clock_max_mhz=1410.0,
        pcie_gen=4,
        pcie_max_gen=4,
        pcie_width=16,
        pcie_max_width=16,
        pcie_replay_count=0,
        ecc_corrected_volatile=0,
        ecc_uncorrected_volatile=0,
        clock_event_hw_thermal_us=0,
        clock_event_sw_thermal_us=0,
        clock_event_hw_power_brake_us=0,
    )
    base.update(kw)
    return GpuSample(**base)


def _run(seconds=120, gpus=8, tool="gpu-burn", log="superbench_gpu_burn.log", tweak=None, **plan):
    samples = []
    for t in range(seconds):
        row = [_gpu(i) for i in range(gpus)]
        if tweak:
            row = [tweak(t, g) for g in row]
        samples.append(Sample(time=T0 + t, gpus=row))
    result = {
        "phases": {
            "preflight": [T0 - 5, T0],
            "load": [T0, T0 + seconds],
            "post": [T0 + seconds, None],
        },
        "gpu": {"tool": tool, "exit_code": 0},
    }
    outputs = {"gpu_burn.log": (FIX / log).read_text()} if log else {}
    return v.NodeRun("gpu01", {"expected_gpus": gpus, **plan}, result, samples, [], None, outputs)


def test_healthy_node_passes_real_gpu_burn_capture():
    verdict = v.judge(_run())
    assert verdict.status == v.PASS, [i.to_dict() for i in verdict.problems()]
    assert v.exit_code([verdict]) == 0
    assert {i.check for i in verdict.gpus[0].items} >= {
        "stressor",
        "xid",
        "ecc",
        "throttle",
        "thermal",
        "pcie",
        "power",
    }


def test_faulty_gpu_fails_with_evidence_and_next_step_derived_faulty():
    verdict = v.judge(_run(log="derived_gpu_burn_faulty.log"))
    assert v.exit_code([verdict]) == 2
    bad = [i for i in verdict.problems() if i.status == v.FAIL]
    assert [(i.gpu, i.check) for i in bad] == [(3, "stressor")]
    assert "FAULTY" in bad[0].evidence and "RMA" in bad[0].next_step


def test_died_gpu_fails_though_listed_ok_derived_died():
    verdict = v.judge(_run(log="derived_gpu_burn_died.log"))
    assert verdict.gpus[6].status == v.FAIL
    assert all(g.status == v.PASS for g in verdict.gpus if g.index != 6)


def test_no_gpu_stressor_is_not_run_never_pass():
    verdict = v.judge(_run(tool=None, log=None))
    assert all(g.status == v.NOT_RUN for g in verdict.gpus)
    assert v.exit_code([verdict]) == 3


def test_hot_gpu_says_fix_airflow():
    verdict = v.judge(
        _run(tweak=lambda t, g: replace(g, temperature_c=88.0) if g.index == 2 else g)
    )
    item = next(i for i in verdict.gpus[2].items if i.check == "thermal")
    assert item.status == v.FAIL and "88 °C" in item.evidence and "airflow" in item.next_step


def test_correctable_ecc_warns_uncorrectable_fails():
    warn = v.judge(
        _run(tweak=lambda t, g: replace(g, ecc_corrected_volatile=t // 60) if g.index == 1 else g)
    )
    assert warn.gpus[1].status == v.WARN and v.exit_code([warn]) == 1
    fail = v.judge(
        _run(tweak=lambda t, g: replace(g, ecc_uncorrected_volatile=t // 60) if g.index == 1 else g)
    )
    assert fail.gpus[1].status == v.FAIL and "RMA" in fail.gpus[1].items[2].next_step


def test_power_brake_and_low_power_point_at_the_psu():
    brake = v.judge(
        _run(
            tweak=lambda t, g: (
                replace(g, clock_event_hw_power_brake_us=t * 1000) if g.index == 5 else g
            )
        )
    )
    item = next(i for i in brake.gpus[5].items if i.check == "throttle")
    assert item.status == v.FAIL and "PSU" in item.next_step
    low = v.judge(_run(tweak=lambda t, g: replace(g, power_w=300.0) if g.index == 4 else g))
    assert next(i for i in low.gpus[4].items if i.check == "power").status == v.FAIL


def test_pcie_downtrained_says_reseat():
    verdict = v.judge(_run(tweak=lambda t, g: replace(g, pcie_width=8) if g.index == 7 else g))
    item = next(i for i in verdict.gpus[7].items if i.check == "pcie")
    assert item.status == v.FAIL and "x8" in item.evidence and "reseat" in item.next_step


def test_xid_during_load_fails_and_45_after_stop_is_allowed():
    run = _run()
    run.events = [NodeEvent(T0 + 120 + 2, "xid", "XID 45", gpu=0, data={"xid": 45})]
    assert v.judge(run).gpus[0].status == v.PASS
    run.events.append(
        NodeEvent(T0 + 30, "xid", "XID 79 on GPU 0: fell off the bus", gpu=0, data={"xid": 79})
    )
    assert v.judge(run).gpus[0].status == v.FAIL


def test_gpu_count_below_expected_fails():
    run = _run()
    run.plan["expected_gpus"] = 9
    verdict = v.judge(run)
    assert verdict.items[0].check == "gpu_count" and verdict.items[0].status == v.FAIL


def test_host_items_not_run_when_tools_missing():
    run = _run(cpu=True, disk="/scratch", net="gpu02")
    run.result.update(
        cpu={"tool": None, "reason": "stress-ng not installed"},
        disk={"tool": None},
        net={"tool": None},
    )
    verdict = v.judge(run)
    assert [(i.check, i.status) for i in verdict.items[1:]] == [
        ("cpu", v.NOT_RUN),
        ("disk", v.NOT_RUN),
        ("net", v.NOT_RUN),
    ]
    assert v.exit_code([verdict]) == 3


def test_stress_ng_exit_2_fails():
    run = _run(cpu=True)
    run.result["cpu"] = {"tool": "stress-ng", "exit_code": 2}
    assert v.exit_code([v.judge(run)]) == 2


def test_settings_override_and_unknown_key():
    cfg = v.settings({"temperature_max_c": 60})
    assert v.judge(_run(), cfg).status == v.FAIL
    with pytest.raises(ConfigError, match="unknown key 'tempmax'"):
        v.settings({"tempmax": 1})


def test_preflight_pending_remap_and_earlier_xid():
    run = _run(tweak=lambda t, g: replace(g, remapped_rows_pending=True) if g.index == 0 else g)
    run.events = [NodeEvent(T0 - 100, "xid", "XID 94", gpu=1, data={"xid": 94})]
    verdict = v.judge(run)
    pre0 = [i for i in verdict.gpus[0].items if i.check == "preflight"]
    assert pre0[0].status == v.FAIL and "remap" in pre0[0].evidence
    pre1 = [i for i in verdict.gpus[1].items if i.check == "preflight"]
    assert pre1[0].status == v.WARN and "XID 94" in pre1[0].evidence


def test_counter_deltas_span_preflight_to_post():
    run = _run()
    # an uncorrectable error counted during the post phase (after the load window)
    run.samples.append(
        Sample(
            time=T0 + 200,
            gpus=[_gpu(i, ecc_uncorrected_volatile=1 if i == 4 else 0) for i in range(8)],
        )
    )
    assert v.judge(run).gpus[4].status == v.FAIL


def test_kernel_lines_edac_and_aer_synthetic_lines():
    run = _run()
    run.result["kernel"] = {"tool": "journalctl", "exit_code": 0}
    run.outputs["kernel.log"] = (
        "2026-01-01T00:00:01+0000 gpu01 kernel: EDAC MC0: 1 CE memory read error on CPU_SrcID#0\n"
        "2026-01-01T00:00:02+0000 gpu01 kernel: pcieport 0000:00:01.0: "
        "AER: Corrected error received\n"
    )
    items = {i.check: i for i in v.judge(run).items}
    assert items["kernel"].status == v.FAIL and "EDAC" in items["kernel"].evidence
    assert items["pcie_aer"].status == v.FAIL
    run.outputs["kernel.log"] = "2026-01-01T00:00:01+0000 gpu01 kernel: eth0: link up\n"
    assert {i.check: i for i in v.judge(run).items}["kernel"].status == v.PASS
    run.result["kernel"] = {"tool": None, "reason": "journalctl -k: No journal files were found."}
    assert {i.check: i for i in v.judge(run).items}["kernel"].status == v.NOT_RUN


# --- item 9: fio against the device spec or the sibling nodes ------------------------------


def _fio_run(node: str, scale: float) -> v.NodeRun:
    """A node whose fio ran clean; its figures are the real capture's, scaled."""
    import json

    doc = json.loads((FIX / "superbench_disk_performance.log").read_text())
    job = doc["jobs"][0]
    jobs = []
    for name, side in (("seqread", "read"), ("seqwrite", "write"), ("randread", "read")):
        j = json.loads(json.dumps(job))
        j["jobname"] = name
        for s in ("read", "write"):
            j[s]["bw_bytes"] = int(j[s]["bw_bytes"] * scale) if s == side else 0
            j[s]["iops"] = j[s]["iops"] * scale if s == side else 0
        jobs.append(j)
    doc["jobs"] = jobs
    run = _run(seconds=30, disk="/scratch")
    run.node = node
    run.result["disk"] = {"tool": "fio", "exit_code": 0}
    run.outputs["fio.json"] = json.dumps(doc)
    return run


def _disk_speed(runs: list[v.NodeRun], cfg=None) -> list[v.Item]:
    verdicts = [v.judge(r) for r in runs]
    disk_speed.compare_disks(runs, verdicts, cfg or v.DEFAULTS)
    return [next(i for i in vd.items if i.check == "disk_speed") for vd in verdicts]


def test_fio_compared_with_the_median_of_the_other_nodes():
    runs = [_fio_run("a", 1.0), _fio_run("b", 1.02), _fio_run("c", 0.98), _fio_run("d", 0.6)]
    a, b, c, d = _disk_speed(runs)
    assert a.status == b.status == c.status == v.PASS, a
    assert "median of 3 other nodes" in a.evidence
    assert d.status == v.FAIL and "sequential read" in d.evidence and "4k random read" in d.evidence


def test_one_other_node_is_no_median_to_judge_by():
    """Two nodes, one drive three times slower: "the median of 1 other node" is that node,
    and nothing says which of the two is wrong. Could not compare, unless a spec is set."""
    slow, fast = _disk_speed([_fio_run("a", 0.33), _fio_run("b", 1.0)])
    for item in (slow, fast):
        assert item.status == v.NOT_RUN
        assert item.evidence.startswith("could not compare: 1 other node of the run measured its own drive")
    assert "sequential read" in slow.evidence  # its figures are still said
    spec = v.settings({"disk_seq_read_mbps": 1.0})  # a spec both meet
    assert [i.status for i in _disk_speed([_fio_run("a", 0.33), _fio_run("b", 1.0)], spec)] == [v.PASS] * 2


def _on(run: v.NodeRun, fstype: str, source: str, fs_id: str | None) -> v.NodeRun:
    run.result["disk"]["fs"] = {"type": fstype, "source": source, "mount": "/scratch", "id": fs_id}
    return run


def test_a_shared_or_network_scratch_measures_the_storage_not_the_node():
    """Three nodes on one file system (the same identity), a fourth on NFS: none is compared,
    each says what it measured; nodes on their own drives are still compared among themselves."""
    runs = [_on(_fio_run(n, s), "ext4", "/dev/md0", "uuid:1b2c") for n, s in (("a", 1.0), ("b", 0.3), ("c", 1.0))]
    runs.append(_on(_fio_run("d", 0.1), "nfs4", "storage01:/scratch", "nfs4:storage01:/scratch"))
    runs += [_on(_fio_run(n, s), "xfs", "/dev/nvme0n1", None) for n, s in (("e", 1.0), ("f", 1.0), ("g", 0.5))]
    items = dict(zip("abcdefg", _disk_speed(runs), strict=True))
    for name in "abc":
        assert items[name].status == v.NOT_RUN
        assert items[name].evidence.startswith(
            "measured a file system a, b and c share (ext4 /dev/md0), not this node's drive: not compared"
        )
    assert items["d"].status == v.NOT_RUN
    assert items["d"].evidence.startswith("measured the network storage nfs4 storage01:/scratch")
    assert items["e"].status == items["f"].status == v.PASS
    assert items["g"].status == v.FAIL and "median of 2 other nodes" in items["g"].evidence


def test_fio_alone_cannot_be_compared_unless_a_spec_is_set():
    (alone,) = _disk_speed([_fio_run("a", 1.0)])
    assert alone.status == v.NOT_RUN and "could not compare" in alone.evidence
    spec = v.settings({"disk_randread_iops": 1e9})  # a spec no drive meets
    (judged,) = _disk_speed([_fio_run("a", 1.0)], spec)
    assert judged.status == v.FAIL and "the device spec" in judged.evidence


# --- item 12: the loader smoke test ---------------------------------------------------------


def test_smoke_test_idle_gpus_are_loader_starvation():
    run = _run(seconds=30)
    run.result["smoke"] = {"tool": "smoke", "exit_code": None, "timed_out": True,
                           "samples": 100, "zero": {"0": 0, "1": 12, "2": 4}}
    item = next(i for i in v.judge(run).items if i.check == "smoke")
    assert item.status == v.FAIL and "GPU 1 12 %" in item.evidence and "GPU 2" not in item.evidence
    run.result["smoke"]["zero"]["1"] = 4
    item = next(i for i in v.judge(run).items if i.check == "smoke")
    assert item.status == v.PASS and "4.0 %" in item.evidence
    run.result["smoke"].update({"exit_code": 1, "timed_out": False})
    item = next(i for i in v.judge(run).items if i.check == "smoke")
    assert item.status == v.FAIL and "exited 1" in item.evidence


def test_runs_from_before_these_checks_are_judged_as_before():
    """A result.json without nccl/bmc/smoke (an older driver) gets no such item."""
    checks = {i.check for i in v.judge(_run(seconds=30)).items}
    assert not checks & {"nccl", "bmc", "smoke", "disk_speed"}


# --- optional checks: listed when not run, never a pass, and they do not hold back one -------


def _with_unrun_extras() -> v.NodeRun:
    run = _run()
    run.result["smoke"] = {"tool": None, "reason": "no loader smoke test configured"}
    run.result["bmc"] = {"tool": None, "reason": "ipmitool: Could not open device"}
    return run


def test_an_optional_check_not_run_is_listed_but_does_not_hold_back_a_pass():
    verdict = v.judge(_with_unrun_extras())
    skipped = {i.check: i.status for i in verdict.items if i.check in ("smoke", "bmc")}
    assert skipped == {"smoke": v.NOT_RUN, "bmc": v.NOT_RUN}
    assert verdict.status == v.PASS and v.exit_code([verdict]) == 0
    assert verdict.headline() == "PASS (not run: bmc, smoke)"
    assert verdict.to_dict()["headline"] == "PASS (not run: bmc, smoke)"


def test_the_strict_reading_makes_every_check_count():
    cfg = v.settings({"optional": []})
    verdict = v.judge(_with_unrun_extras(), cfg)
    assert verdict.status == v.NOT_RUN and v.exit_code([verdict]) == 3
    assert verdict.headline() == "NOT RUN"


def test_an_optional_check_that_fails_still_fails():
    run = _with_unrun_extras()
    run.result["smoke"] = {"tool": "smoke", "exit_code": 1, "timed_out": False,
                           "samples": 100, "zero": {"0": 0}}
    verdict = v.judge(run)
    assert verdict.status == v.FAIL and v.exit_code([verdict]) == 2
    assert verdict.headline() == "FAIL (not run: bmc)"


def test_the_gpu_stressor_is_never_optional():
    with pytest.raises(ConfigError, match="'stressor' is not one of gpu_count, run"):
        v.settings({"optional": ["stressor"]})
    with pytest.raises(ConfigError, match="optional = \"smoke\": expected a list of strings"):
        v.settings({"optional": "smoke"})
    verdict = v.judge(_run(tool=None, log=None))  # no GPU stressor on the node
    assert verdict.status == v.NOT_RUN and v.exit_code([verdict]) == 3
