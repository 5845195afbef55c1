"""The nodes' past asks AMD's device-metrics-exporter and Intel Gaudi's metric exporter for
temperature, power and utilisation too, each vendor's GPU label copied to ``gpu`` and Gaudi's
milliwatts made watts (a real Prometheus evaluates the query in
tests/prometheus/test_prometheus_gaudi.py)."""

from __future__ import annotations

from dltui.history.plan import plan
from dltui.history.queries import FIELD, GPU, family_query


def _query() -> str:
    query = family_query("other", 'instance="gpu12:41611"', plan(3600, 1e9, 60, 15), (GPU,))
    assert query is not None
    return query


def test_temperature_power_and_utilisation_ask_every_vendors_series_by_gpu():
    query = _query()
    temperature = query.split(' "dltui_field", "temperature_c"')[0]
    assert "max_over_time(DCGM_FI_DEV_GPU_TEMP{instance=\"gpu12:41611\"}[60s])" in temperature
    assert ('label_replace(max_over_time({__name__=~"(amd_)?(gpu_edge_temperature)",instance="gpu12:41611"}'
            '[60s]), "gpu", "$1", "gpu_id", "(.*)")') in temperature
    assert ('label_replace(max_over_time({__name__=~"habanalabs_temperature_onchip",instance="gpu12:41611"}'
            '[60s]), "gpu", "$1", "id", "(.*)")') in temperature
    assert ('max_over_time({__name__=~"habanalabs_power_mW",instance="gpu12:41611"}[60s]) / 1000, '
            '"gpu", "$1", "id", "(.*)")') in query
    assert '"(amd_)?(gpu_package_power|gpu_average_package_power)"' in query
    assert 'min_over_time({__name__=~"(amd_)?(gpu_gfx_activity)",' in query
    assert 'min_over_time({__name__=~"habanalabs_utilization",' in query


def test_each_field_stays_one_grouped_expression_and_dltuis_own_series_are_untouched():
    query = _query()
    assert query.count('"dltui_field", "temperature_c"') == 1
    assert 'max by (gpu) (max_over_time(DCGM_FI_DEV_GPU_TEMP' in query
    assert FIELD["temperature_c"].dltui == "max_over_time(dltui_gpu_temperature_celsius{{{s}}}[{o}])"
    mine = family_query("dltui", 'node="gpu12"', plan(3600, 1e9, 60, 15), (GPU,))
    assert mine is not None and "habanalabs" not in mine and "amd_" not in mine
    assert "habanalabs" not in (FIELD["memory_temperature_c"].other or "")  # not published: n/a
