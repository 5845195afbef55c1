"""The GPU field table drives the generic places: history, the exporter, the fleet filter, the
generic detail lines. Each test reads those places' output, not the table's own rows."""

from __future__ import annotations

from dltui.core import gpu_fields
from dltui.core.gpu_fields import GPU_FIELDS, GpuField
from dltui.core.models import GpuSample, Sample
from dltui.core.series import GPU_METRICS, Metric, SeriesKey
from dltui.core.state import NodeHistory
from dltui.export.metrics import _GPU
from dltui.node.schema import GPU_FIELDS as WIRE_GPU_FIELDS
from dltui.ui.fleet_query import KEYS


def test_every_row_names_a_gpu_sample_reading_once():
    attrs = [f.attr for f in GPU_FIELDS]
    assert len(attrs) == len(set(attrs))
    sample = GpuSample(0)
    for f in GPU_FIELDS:  # a wire field, or a property computed from them
        assert f.attr in WIRE_GPU_FIELDS or isinstance(getattr(type(sample), f.attr), property), f.attr


def test_every_per_gpu_metric_but_the_sub_second_minimum_has_one_row():
    historied = [f.history for f in GPU_FIELDS if f.history is not None]
    assert len(historied) == len(set(historied))
    assert set(historied) == set(GPU_METRICS) - {Metric.GPU_UTILIZATION_MIN_PERCENT}


def test_history_records_each_row_under_its_metric():
    values = {f.attr: float(i + 1) for i, f in enumerate(GPU_FIELDS) if f.attr in WIRE_GPU_FIELDS}
    gpu = GpuSample(3, **{**values, "memory_used_mib": 20.0, "memory_total_mib": 80.0})
    history = NodeHistory(capacity=4)
    history.record(Sample(time=1.0, gpus=[gpu]))
    for f in GPU_FIELDS:
        if f.history is not None:
            assert history.get(SeriesKey(f.history, 3)) == [getattr(gpu, f.attr)], f.attr


def test_the_exporter_writes_each_exported_row_in_base_units():
    by_name = {name: (type_, help_, get, scale) for name, type_, help_, get, scale in _GPU}
    assert list(by_name) == [f.export.name for f in GPU_FIELDS if f.export is not None]
    gpu = GpuSample(0, utilization_percent=50.0, memory_used_mib=2.0, sm_clock_mhz=1410.0, temperature_c=61.0)
    _, _, get, scale = by_name["dltui_gpu_utilization_ratio"]
    assert get(gpu) * scale == 0.5
    _, _, get, scale = by_name["dltui_gpu_memory_used_bytes"]
    assert get(gpu) * scale == 2 * 1024 * 1024
    _, _, get, scale = by_name["dltui_gpu_sm_clock_hertz"]
    assert get(gpu) * scale == 1_410_000_000
    _, _, get, scale = by_name["dltui_gpu_temperature_celsius"]
    assert get(gpu) * scale == 61.0
    for f in GPU_FIELDS:  # Prometheus' conventions: counters end in _total, gauges never do
        if f.export is not None:
            assert f.export.name.startswith("dltui_gpu_")
            assert f.export.name.endswith("_total") == (f.export.type == "counter"), f.export.name


def test_every_filter_row_is_a_fleet_filter_key_with_its_label():
    for f in GPU_FIELDS:
        if f.filter is not None:
            assert KEYS[f.filter][0] == f"{f.label} {f.unit}".rstrip()


def test_a_detail_row_shows_on_the_generic_line_only_when_reported(monkeypatch):
    extra = GpuField("power_limit_w", "W", "GPU power limit", detail=True, short="limit")
    monkeypatch.setattr(gpu_fields, "DETAILS", (extra,))
    assert gpu_fields.details(GpuSample(0)) == []
    assert gpu_fields.details(GpuSample(0, power_limit_w=700.0)) == [("limit", "700W")]

