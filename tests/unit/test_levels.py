"""The dashboard's colours come from the rules' own parameters: a value is shown hot exactly
where a rule raises (or would raise) its alert, under the config's [rules] and a node's
groups; nothing is a literal of the UI's own but a disk's busy time, which no rule judges."""

from __future__ import annotations

from dltui.config import load
from dltui.core.rules import build_engine
from dltui.ui import levels


def test_defaults_follow_the_rules_defaults():
    t = levels.DEFAULT
    c = t.capacity
    assert (c.memory_warm_percent, c.memory_hot_percent) == (92.0, 95.0)  # host_memory_low 8 / 5
    assert (c.fs_warm_percent, c.fs_hot_percent) == (90.0, 95.0)  # filesystem_full
    assert levels.memory(94.9, t) == levels.WARM and levels.memory(95.0, t) == levels.HOT
    assert levels.memory(91.9, t) == levels.OK
    assert levels.utilization(0.0, t) == levels.IDLE and levels.utilization(1.0, t) == levels.OK


def test_the_config_moves_the_colours_with_the_rules():
    rules = {
        "host_memory_low": {"available_below": 10, "clear_above": 15},
        "filesystem_full": {"warning": 70, "critical": 80},
        "loader_starvation": {"io_some": 5},
    }
    t = levels.Thresholds.from_rules(rules)
    assert levels.memory(90.0, t) == levels.HOT and levels.memory(86.0, t) == levels.WARM
    assert levels.filesystem(75.0, t) == levels.WARM and levels.filesystem(80.0, t) == levels.HOT
    assert levels.pressure("io", 6.0, 0.0, t) == levels.WARM
    assert levels.pressure("io", 6.0, 0.0, levels.DEFAULT) == levels.OK


def test_pressure_is_warm_where_starvation_names_the_cause_and_hot_where_memory_is_critical():
    t = levels.DEFAULT
    assert levels.pressure("io", 19.9, 0.0, t) == levels.OK
    assert levels.pressure("io", 20.0, 0.0, t) == levels.WARM
    assert levels.pressure("io", 1.0, 5.0, t) == levels.WARM  # io full alone names io too
    assert levels.pressure("cpu", 49.0, None, t) == levels.OK  # the cpu cause needs 50 %
    assert levels.pressure("memory", 10.0, 0.0, t) == levels.WARM
    assert levels.pressure("memory", 1.0, 5.0, t) == levels.HOT  # host_memory_low critical
    assert levels.pressure("io", None, None, t) == levels.NA


def test_each_node_gets_its_groups_thresholds(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(
        '[groups.air]\nhosts = ["air*"]\n'
        "[groups.air.rules.filesystem_full]\nwarning = 60\ncritical = 70\n"
    )
    cfg = load(str(path))
    engine = build_engine(cfg)
    nodes = levels.NodeThresholds(engine.settings)
    assert levels.filesystem(65.0, nodes.of("air01")) == levels.WARM
    assert levels.filesystem(65.0, nodes.of("gpu01")) == levels.OK


def test_the_summary_counts_hot_and_idle_gpus_as_the_cells_colour_them():
    """levels.hot_and_idle writes temperature's HOT and utilization's IDLE out for speed: over
    every combination that matters, under default and lowered limits, it counts the same."""
    from itertools import product

    from dltui.core.models import GpuSample

    lowered = levels.Thresholds.from_rules({"gpu_temp_high": {"warning": 70, "critical": 75}})
    for t in (levels.DEFAULT, lowered):
        limits = (t.temp_warning_c, t.temp_critical_c, t.margin_warning_c, t.margin_critical_c)
        values = (None, -1.0, *(v + d for v in limits for d in (-0.5, 0.0, 0.5)))  # each side of each
        for core, margin, util in product(values, values, (None, 0.0, 1.0, 100.0)):
            g = GpuSample(0, temperature_c=core, temperature_margin_c=margin, utilization_percent=util)
            hot = levels.temperature(core, margin, t) == levels.HOT
            idle = levels.utilization(util, t) == levels.IDLE
            assert levels.hot_and_idle([g, g], t) == (2 * hot, 2 * idle), (core, margin, util)
