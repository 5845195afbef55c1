"""The stressors' readers on real captures (and variants derived from them, named so)."""

from __future__ import annotations

import json
from pathlib import Path

from dltui.node.burnin.parse import (
    GpuBurnParser,
    parse_dcgm,
    parse_fio,
    parse_gpu_burn,
    parse_iperf3,
    parse_matmul,
    stress_ng_verdict,
)

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "burn-in"


def _text(name: str) -> str:
    return (FIX / name).read_text()


def test_gpu_burn_real_capture_all_ok():
    res = parse_gpu_burn(_text("superbench_gpu_burn.log"))
    assert res.tested == 8
    assert res.percent == 100.0
    assert sorted(res.gpus) == list(range(8))
    assert all(g.final == "OK" and g.procd > 0 and not g.died for g in res.gpus.values())
    assert res.gpus[0].procd == 6783 and res.gpus[3].procd == 4522
    assert res.gpus[1].gflops[-1] == 17093
    assert res.listed[0] == "NVIDIA A100-SXM4-80GB"
    assert res.problems(expected_gpus=8) == {}


def test_gpu_burn_expected_count_mismatch():
    res = parse_gpu_burn(_text("superbench_gpu_burn.log"))
    assert "8 GPUs, 4 expected" in res.problems(expected_gpus=4)[None][0]


def test_gpu_burn_derived_faulty_variant():
    res = parse_gpu_burn(_text("derived_gpu_burn_faulty.log"))
    problems = res.problems(expected_gpus=8)
    assert list(problems) == [3]
    assert any("FAULTY" in p for p in problems[3])
    assert res.gpus[3].errors >= 3


def test_gpu_burn_derived_died_variant_fails_though_it_says_ok():
    res = parse_gpu_burn(_text("derived_gpu_burn_died.log"))
    assert res.gpus[6].final == "OK"  # the trap: gpu_burn still lists it OK
    problems = res.problems(expected_gpus=8)
    assert list(problems) == [6]
    assert any("DIED" in p for p in problems[6])


def test_gpu_burn_killed_before_the_end_is_a_failure():
    text = _text("superbench_gpu_burn.log")
    res = parse_gpu_burn(text[: text.index("Tested 8 GPUs")])
    assert "never printed 'Tested N GPUs:'" in res.problems(8)[None][0]


def test_gpu_burn_worker_that_never_started_is_not_ok():
    # gpu-burn issue #14: a GPU whose worker failed to start still ends OK.
    text = (
        "\r10.0%  proc'd: 10 (7000 Gflop/s) - 0 (0 Gflop/s)   errors: 0 - 0   temps: 40 C - 41 C \n"
    )
    text += "\nTested 2 GPUs:\n\tGPU 0: OK\n\tGPU 1: OK\n"
    problems = parse_gpu_burn(text).problems(2)
    assert list(problems) == [1] and "proc'd 0" in problems[1][0]


def test_gpu_burn_incremental_chunks_equal_whole():
    text = _text("derived_gpu_burn_faulty.log")
    parser = GpuBurnParser()
    for i in range(0, len(text), 777):
        parser.feed(text[i : i + 777])
    res = parser.finish()
    whole = parse_gpu_burn(text)
    assert res.to_dict() == whole.to_dict()


def test_gpu_burn_errors_summed_across_summaries():
    line = "\r{p}%  proc'd: 5 (10 Gflop/s)   errors: {e}  (WARNING!)   temps: 40 C "
    text = line.format(p="10.0", e=2) + "\n\tSummary at:   x\n" + line.format(p="20.0", e=1)
    text += "\nTested 1 GPUs:\n\tGPU 0: FAULTY\n"
    res = parse_gpu_burn(text)
    assert res.gpus[0].errors == 3 and res.gpus[0].warned


def _gcm() -> dict:
    return json.loads(_text("gcm_dcgmi-diag-3x_test-strings.json"))


def test_dcgm_3x_gcm_test_strings_pass_fail_warn():
    cases = _gcm()
    verdicts = {}
    for key, case in cases.items():
        res = parse_dcgm(json.dumps(case["stdout"]), case["returncode"])
        verdicts[key] = res.verdict
    assert verdicts["diag_pass_output"] == "pass"
    assert verdicts["diag_fail_output"] == "fail"
    assert verdicts["diag_warn_output"] == "warn"
    # Return code 205: judged from the JSON? No: any non-zero exit of dcgmi diag is a failure.
    assert verdicts["non_fatal_error_code_output"] == "fail"
    failed = parse_dcgm(json.dumps(cases["diag_fail_output"]["stdout"]), 0).failed()
    assert {t["name"] for t in failed} == {"Persistence Mode", "Environment Variables"}


def test_dcgm_4x_layout_shaped_per_schema():
    # Shaped per NVIDIA/DCGM testing/python3/dcgm_diag_schema.json (4.x), not a GPU capture.
    doc = {
        "DCGM Diagnostic": {
            "test_categories": [
                {
                    "category": "Hardware",
                    "tests": [
                        {
                            "name": "memory",
                            "results": [
                                {"entity_id": 0, "status": "Pass"},
                                {"entity_id": 1, "status": "Fail", "info": "DBE"},
                            ],
                            "test_summary": {"status": "Fail"},
                            "warnings": [{"error_id": 1, "warning": "uncorrectable ECC on GPU 1"}],
                        }
                    ],
                }
            ]
        },
        "metadata": {"version": "4.1.1"},
        "unknown_key": 1,
    }
    res = parse_dcgm(json.dumps(doc), 0)
    assert res.version == "4.1.1"
    assert res.verdict == "fail"
    assert [(t["gpu"], t["status"]) for t in res.failed()] == [(1, "fail")]
    assert res.warnings == ["uncorrectable ECC on GPU 1"]


def test_dcgm_garbage_is_not_a_pass():
    assert parse_dcgm("Error: unable to connect to host engine", 0).verdict == "unknown"
    assert parse_dcgm("", 226).verdict == "fail"


def test_stress_ng_exit_codes():
    assert stress_ng_verdict(0)["verdict"] == "pass"
    assert stress_ng_verdict(2)["verdict"] == "fail"
    assert stress_ng_verdict(3)["verdict"] == "inconclusive"
    assert stress_ng_verdict(None)["verdict"] == "unknown"
    assert stress_ng_verdict(-9)["verdict"] == "fail"


def test_fio_real_capture():
    res = parse_fio(_text("superbench_disk_performance.log"))
    assert res["error"] is None and res["version"] == "fio-3.16"
    assert res["jobs"][0]["read_bytes_per_s"] == 348743777
    assert res["jobs"][0]["read_iops"] > 85000


def test_fio_job_error_and_noise_before_json():
    doc = {"fio version": "fio-3.33", "jobs": [{"jobname": "seq", "error": 5, "read": {}}]}
    res = parse_fio("note: both iodepth >= 1 and synchronous I/O engine\n" + json.dumps(doc))
    assert res["error"] == "fio job seq: error 5: Input/output error"  # errno 5 in words


def test_iperf3_fields_and_error():
    doc = {
        "end": {
            "sum_sent": {"bits_per_second": 9.4e9, "retransmits": 3},
            "sum_received": {"bits_per_second": 9.3e9},
        }
    }
    res = parse_iperf3(json.dumps(doc))
    assert res == {
        "error": None,
        "sent_bits_per_s": 9.4e9,
        "received_bits_per_s": 9.3e9,
        "retransmits": 3,
    }
    assert parse_iperf3(json.dumps({"error": "unable to connect to server"}))["error"]


def test_matmul_lines():
    lines = [
        '{"gpu": 0, "t": 1.0, "iters": 50, "tflops": 250.0, "errors": 0}',
        '{"gpu": 1, "t": 1.0, "iters": 50, "tflops": 240.0, "errors": 2}',
        "garbage",
        '{"gpu": 0, "result": "OK"}',
        '{"gpu": 1, "result": "FAULTY"}',
    ]
    gpus = parse_matmul(lines)
    assert gpus[0]["result"] == "OK" and gpus[0]["iters"] == 50
    assert gpus[1]["errors"] == 2 and gpus[1]["result"] == "FAULTY"
