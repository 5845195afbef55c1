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
