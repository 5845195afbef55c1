"""Intel Gaudi on the node: both real hl-smi captures parse, and the collector reads one
long-lived ``hl-smi -Q … -l N`` (a fake on PATH replaying the real HL-325L capture)."""

from __future__ import annotations

import json
from pathlib import Path

from dltui.node.probe import gaudi
from dltui.node.probe.gpu_records import GPU_FACT_FIELDS
from dltui.node.probe.problems import Problems
from dltui.node.probe.smi import parse_query_csv
from dltui.node.schema import GPU_FIELDS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gaudi"
FAKES = Path(__file__).resolve().parents[1] / "fakes"
LOOP = FIXTURES / "hl-smi-query-hl325l.csv"
IDENTITY = FIXTURES / "hl-smi-query-moduleid-serial-busid-driver-gaudi2-x8.csv"


def test_hl325l_loop_capture_maps_onto_the_gpu_fields():
    rows = parse_query_csv(LOOP.read_text(), gaudi.LOOP_FIELDS).rows
    records = [gaudi.record_from_row(row) for row in rows]
    assert [r["index"] for r in records] == [0, 1]
    first = records[0]
    assert set(first) == set(GPU_FIELDS)
    assert first["vendor"] == "intel" and first["name"] == "HL-325L"
    assert first["uuid"] == "01P4-HL3090A0-18-U4V193-22-07-00"
    assert (first["memory_used_mib"], first["memory_total_mib"]) == (672.0, 131072.0)
    assert (first["power_w"], first["power_limit_w"]) == (226.0, 850.0)
    assert (first["temperature_c"], first["utilization_percent"]) == (36.0, 0.0)
    assert records[1]["temperature_c"] == 39.0
    # what hl-smi's query does not carry is n/a, never 0
    for field in ("hotspot_temperature_c", "pcie_replay_count", "ecc_corrected_volatile", "sm_clock_mhz", "throttled"):
        assert first[field] is None


def test_gaudi2_identity_capture_with_header_gives_serials_and_bus_ids_in_device_order():
    table = parse_query_csv(IDENTITY.read_text())
    assert table.fields == gaudi.IDENTITY_FIELDS
    assert [r["module_id"] for r in table.rows] == ["2", "6", "3", "0", "7", "1", "4", "5"]
    loop_rows = [{"index": str(i), "name": "HL-225", "driver_version": "1.17.0-28a11ca"} for i in range(8)]
    facts = gaudi.facts_from_rows(loop_rows, table.rows)
    assert set(facts[0]) == set(GPU_FACT_FIELDS)
    assert (facts[0]["serial"], facts[0]["bus_id"]) == ("AM50016189", "0000:19:00.0")
    assert (facts[3]["serial"], facts[3]["bus_id"]) == ("AM50016134", "0000:43:00.0")
    assert facts[0]["driver_version"] == "1.17.0-28a11ca" and facts[0]["vendor"] == "intel"


def test_loop_argv_takes_whole_seconds():
    assert gaudi.loop_argv("hl-smi", 0.25)[-2:] == ["-l", "1"]
    assert gaudi.loop_argv("hl-smi", 3.0)[-2:] == ["-l", "3"]


def test_collector_reads_one_long_lived_fake_hl_smi(tmp_path, monkeypatch):
    log = tmp_path / "hl-smi.log"
    monkeypatch.setenv("FAKE_HLSMI_LOG", str(log))
    monkeypatch.setenv("FAKE_HLSMI_SET", json.dumps({"1": {"9": "97 C"}}))
    collector = gaudi.GaudiCollector(Problems(), 1.0, str(FAKES / "hl-smi"))
    try:
        facts = collector.facts()
        assert [g["name"] for g in facts["gpus"]] == ["HL-325L", "HL-325L"]
        assert facts["gpus"][0]["power_limit_w"] == 850.0
        for _ in range(3):
            records = collector.sample()
        assert [r["temperature_c"] for r in records] == [36.0, 97.0]
    finally:
        collector.close()
    loops = [line for line in log.read_text().splitlines() if "-l" in line.split()]
    assert len(loops) == 1  # one process for every sample


def test_failing_hl_smi_says_so_in_its_own_words(tmp_path):
    broken = tmp_path / "hl-smi"
    broken.write_text("#!/bin/sh\necho 'hl-smi: failed to open device' >&2\nexit 3\n")
    broken.chmod(0o755)
    problems = Problems()
    collector = gaudi.GaudiCollector(problems, 1.0, str(broken))
    try:
        collector.facts()
        assert collector.sample() == []
        messages = [m for _, m in problems.drain()]
        assert any(m.startswith("hl-smi failed (exit 3): hl-smi: failed to open device") for m in messages), messages
        assert not any("nvidia" in m.lower() for m in messages)
    finally:
        collector.close()


def test_an_aip_whose_readings_are_all_na_is_an_error_record_not_zeros():
    row = dict(zip(gaudi.LOOP_FIELDS, LOOP.read_text().splitlines()[0].split(", "), strict=True))
    row.update({"memory.used": "N/A", "power.draw": "N/A", "temperature.aip": "N/A", "utilization.aip": "N/A"})
    record = gaudi.record_from_row(row)
    assert record["error"] == gaudi.NO_READINGS and record["vendor"] == "intel"
    assert record["temperature_c"] is None and record["power_w"] is None
