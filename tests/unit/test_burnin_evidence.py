"""A failing stressor's evidence is the tool's own words, wherever the verdict is read: the
CLI line, the Markdown/JSON/HTML report and the burn-in screen. DCGM 4.x results that carry
both ``info`` and ``warnings`` give DCGM's message and error id, never the info line."""

from __future__ import annotations

import json
from pathlib import Path

from dltui.burnin import live, report
from dltui.burnin import verdict as v
from dltui.burnin.remote import NodeRunView, RunCollector
from dltui.node.burnin import stressors
from dltui.node.burnin.parse import parse_dcgm, parse_fio, shorten, stress_ng_verdict

from .test_burnin_verdict import _run

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "burn-in"
FAULTY_MEMORY = "memory fail: Found 12 faulty memory elements on GPU 2 (DCGM error 52)"


def _dcgm_run(name: str = "derived_dcgmi-diag-4x_memory-fail.json") -> v.NodeRun:
    run = _run(gpus=4, tool="dcgm", log=None)
    run.outputs["dcgm.json"] = (FIX / name).read_text()
    return run


def test_dcgm_4x_error_beats_the_info_line_derived_4x():
    diag = parse_dcgm((FIX / "derived_dcgmi-diag-4x_memory-fail.json").read_text(), 0)
    assert diag.version == "4.2.3" and diag.verdict == "fail"
    (failed,) = diag.failed()
    assert failed["errors"] == [{"id": 52, "message": "Found 12 faulty memory elements on GPU 2"}]
    assert failed["info"] == ["Allocated 84012228608 bytes (98.9%)"]  # kept apart, not the evidence
    assert diag.evidence(2) == FAULTY_MEMORY
    assert diag.evidence(0) == ""


def test_dcgm_words_reach_the_cli_line_the_reports_and_the_screen_derived_4x():
    run = _dcgm_run()
    verdict = v.judge(run)
    stressor = {g.index: next(i for i in g.items if i.check == "stressor") for g in verdict.gpus}
    assert stressor[2].status == v.FAIL
    assert stressor[2].evidence == "dcgmi diag " + FAULTY_MEMORY
    assert [stressor[i].status for i in (0, 1, 3)] == [v.PASS] * 3
    # the CLI prints each problem's evidence as is (burnin/cli.py)
    assert any(FAULTY_MEMORY in p.evidence and p.gpu == 2 for p in verdict.problems())
    doc = report.document("r1", [run], [verdict], v.DEFAULTS)
    assert FAULTY_MEMORY in report.markdown(doc)
    assert FAULTY_MEMORY in json.dumps(json.loads(report.to_json(doc)))
    assert FAULTY_MEMORY in report.page(doc, [run])
    view = NodeRunView("gpu01", "r1", RunCollector())
    view.status = {"state": "done", "phase": "post", "tools": {"gpu": "dcgm"}}
    view.verdict = verdict  # as the session leaves it once judged
    screen = live.node_live(view)
    assert screen.status == v.FAIL
    assert screen.gpus[2].problems == ["stressor: dcgmi diag " + FAULTY_MEMORY]


def test_dcgm_3x_strings_still_name_the_failed_tests_gcm():
    doc = json.loads((FIX / "gcm_dcgmi-diag-3x_test-strings.json").read_text())["diag_fail_output"]
    diag = parse_dcgm(json.dumps(doc["stdout"]), 0)
    assert diag.evidence(None) == "Persistence Mode fail; Environment Variables warn"


def test_dcgmi_without_json_says_what_dcgmi_said():
    diag = parse_dcgm("Error: unable to establish a connection to the specified host: localhost\n", 226)
    assert diag.error == (
        "dcgmi diag printed no JSON: Error: unable to establish a connection to the specified host: localhost"
    )


def test_fio_error_is_fios_own_line_captured_enospc():
    res = parse_fio((FIX / "fio-3.33_enospc_tmpfs.log").read_text())
    assert res["error"].startswith(
        "fio job seqwrite: error 28: fio: io_u error on file /scratch/.dltui-burnin-r1/seqwrite.0.0: "
        "No space left on device"
    )
    run = _run(disk="/scratch")
    run.result["disk"] = {"tool": "fio", "exit_code": 1}
    run.outputs["fio.json"] = (FIX / "fio-3.33_enospc_tmpfs.log").read_text()
    item = next(i for i in v.judge(run).items if i.check == "disk")
    assert item.status == v.FAIL and "No space left on device" in item.evidence


def test_fio_that_stopped_before_its_report_is_quoted_captured_bad_directory():
    res = parse_fio((FIX / "fio-3.33_bad-directory.log").read_text())
    assert res["error"] == (
        "fio: /scratch/.dltui-burnin-r1 is not a directory; fio: failed parsing "
        "directory=/scratch/.dltui-burnin-r1; fio: file:options.c:1457, func=lstat, error=No such file or directory"
    )


def test_stress_ng_failure_ends_with_its_own_words_shortened_captured():
    said = (FIX / "stress-ng-0.15.06_bad-cpu-method.log").read_text()
    reason = stress_ng_verdict(1, said)["reason"]
    assert reason.startswith("stress-ng: usage or harness error (exit 1): cpu-method must be one of: all ackermann")
    assert reason.endswith("…") and len(reason) < 300
    run = _run(cpu=True)
    run.result["cpu"] = {"tool": "stress-ng", "exit_code": 1}
    run.outputs["stress-ng.log"] = said
    item = next(i for i in v.judge(run).items if i.check == "cpu")
    assert "cpu-method must be one of" in item.evidence
    assert stress_ng_verdict(0, said)["reason"] == "stress-ng passed (with --verify) (exit 0)"


def test_a_failed_smoke_test_or_nccl_run_ends_with_its_last_line(tmp_path):
    log = tmp_path / "smoke.log"
    log.write_text("epoch 1\nTraceback (most recent call last):\n  ...\nRuntimeError: CUDA error: out of memory\n\n")
    said = stressors.last_words(str(log))
    assert said == "RuntimeError: CUDA error: out of memory"
    run = _run(seconds=30)
    run.result["smoke"] = {"tool": "smoke", "exit_code": 1, "timed_out": False, "last_words": said}
    run.result["nccl"] = {"tool": "nccl-tests", "exit_code": 3, "last_words": "gpu01: Test NCCL failure common.cu:1005 'unhandled cuda error'"}
    items = {i.check: i for i in v.judge(run).items}
    assert items["smoke"].evidence == "the smoke command exited 1: RuntimeError: CUDA error: out of memory"
    assert items["nccl"].evidence == (
        "all_reduce_perf gave no result (exit 3): gpu01: Test NCCL failure common.cu:1005 'unhandled cuda error'"
    )


def test_shorten_keeps_one_line_and_marks_the_cut():
    assert shorten("a\n b  c") == "a b c"
    assert shorten("x" * 300, 10) == "x" * 9 + "…"
