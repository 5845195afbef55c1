"""The alerts pane folds one finding on many GPUs into one line, worst first."""

from dltui.core.timeline import Alert
from dltui.ui.widgets.alerts_pane import gpu_list, group_by_rule


def test_same_rule_and_severity_on_several_gpus_is_one_line_naming_them_all():
    alerts = [Alert("loader_starvation", "warning", f"GPU starved {30 + g} %", 0.0, gpu=g) for g in range(3)]
    alerts.append(Alert("hw_slowdown", "critical", "HW slowdown", 0.0, gpu=1))
    alerts.append(Alert("loader_starvation", "critical", "GPU starved 45 %", 0.0, gpu=7))
    groups = group_by_rule(alerts)
    assert [(a.rule, a.severity, gpus) for a, gpus in groups] == [
        ("loader_starvation", "warning", [0, 1, 2]),
        ("hw_slowdown", "critical", [1]),
        ("loader_starvation", "critical", [7]),
    ]
    assert groups[0][0].message == "GPU starved 30 %"
    assert gpu_list([0, 1, 2]) == "GPU0,1,2 (GPU0 shown) "
    assert gpu_list([5]) == "GPU5 "
    assert gpu_list([]) == ""


def test_gpu_pane_colours_clocks_and_link_by_the_alerts_open_on_them():
    """Pane and alerts agree whatever thresholds the config sets: no second set of numbers."""
    from dltui.core.state import NodeState
    from dltui.ui import levels
    from dltui.ui.widgets.gpu_pane import CLOCK_RULES, PCIE_RULES, _alerted

    node = NodeState("gpu01")
    assert _alerted(node, 3, CLOCK_RULES) == ""
    node.alerts[("power_capped", 3)] = Alert("power_capped", "info", "capped", 0.0, gpu=3)
    node.alerts[("clock_sag", 3)] = Alert("clock_sag", "warning", "sag", 0.0, gpu=3)
    assert _alerted(node, 3, CLOCK_RULES) == levels.STYLE[levels.WARM]
    node.alerts[("hw_slowdown", 3)] = Alert("hw_slowdown", "critical", "slow", 0.0, gpu=3)
    assert _alerted(node, 3, CLOCK_RULES) == levels.STYLE[levels.HOT]
    assert _alerted(node, 2, CLOCK_RULES) == "" and _alerted(node, 3, PCIE_RULES) == ""


def test_rules_without_signals_on_this_hardware_are_listed_as_na():
    from dltui.core.state import NodeState
    from dltui.ui.widgets.alerts_pane import not_applicable

    node = NodeState("gpu01")
    assert not_applicable(node) is None
    node.rules_na = {0: {"hbm_temp_high", "thermal_margin_low"}, 1: {"hbm_temp_high"}, None: {"host_memory_low"}}
    assert not_applicable(node).plain == (
        "n/a here, not reported by this hardware: hbm_temp_high (GPU0,1); host_memory_low (node); "
        "thermal_margin_low (GPU0)"
    )
    from dltui.core.models import NodeFacts

    node.facts = NodeFacts(hostname="gpu01", gpu_source="nvidia-smi")  # the fallback reads less than NVML
    assert not_applicable(node).plain.startswith("n/a here, no signal from this hardware through nvidia-smi (NVML reads more): ")


def test_each_node_is_coloured_by_its_own_groups_thresholds_like_its_alerts():
    from dltui.config import parse
    from dltui.core.rules import build_engine
    from dltui.ui import levels

    cfg = parse(
        {
            "rules": {"gpu_temp_high": {"warning": 80}},
            "groups": {"hot-room": {"hosts": ["gpu1*"], "rules": {"gpu_temp_high": {"warning": 75, "critical": 78}}}},
        }
    )
    th = levels.NodeThresholds(build_engine(cfg).settings, cfg.rules)
    assert levels.temperature(79, None, th.of("gpu11")) == levels.HOT  # the hot room's own limits
    assert levels.temperature(79, None, th.of("gpu01")) == levels.OK  # the fleet's: warning 80
    assert levels.temperature(82, None, th.of("gpu01")) == levels.WARM
    assert th.of("gpu01") is th.default and levels.NodeThresholds(None, cfg.rules).of("gpu11") == th.default
