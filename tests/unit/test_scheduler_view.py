"""The scheduler's view of a node, parsed from real output: ``scontrol show node`` (this
project's Slurm lab, and a ParallelCluster capture) and ``kubectl get node -o json`` (k9s)."""

from __future__ import annotations

import json
from pathlib import Path

from dltui.core.scheduler import (
    DLTUI_REASON_PREFIX,
    SchedulerView,
    drain_reason,
    parse_kubectl_node,
    parse_scontrol_node,
    slurm_name_for,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scheduler"


def _read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_idle_node_of_the_lab():
    node = parse_scontrol_node(_read("scontrol-show-node-oneliner_dltui-lab-22.05.8-idle.txt"))
    assert node is not None
    assert (node.name, node.state, node.word, node.reason) == ("vm", "IDLE", "idle", "")
    assert not node.drained and not node.busy


def test_a_dltui_drain_reads_back_without_slurms_stamp():
    node = parse_scontrol_node(_read("scontrol-show-node-oneliner_dltui-lab-22.05.8-idle-drain.txt"))
    assert node is not None
    assert node.word == "drain" and node.drained_by_dltui
    assert node.reason == (
        "dltui: GPU 0: HW power brake active (0x80) for 1m22s; SM 705 of 1980 MHz, power 632 W — "
        "check PSU and power cabling [root]"
    )
    assert (node.reason_by, node.reason_at) == ("root", "2026-12-06T04:37:52")


def test_another_drain_with_a_job_running_is_draining_and_not_ours():
    node = parse_scontrol_node(_read("scontrol-show-node-oneliner_dltui-lab-22.05.8-mixed-drain-nhc.txt"))
    assert node is not None
    assert (node.state, node.word, node.busy) == ("MIXED+DRAIN", "draining", True)
    assert node.reason == "NHC: check_hw_ib failed"
    assert not node.drained_by_dltui
    assert SchedulerView(slurm=node).cell() == "draining NHC: check_hw_ib failed"


def test_multiline_show_nodes_first_record_and_the_reason_before_comment():
    node = parse_scontrol_node(_read("scontrol-show-nodes-multiline_parallelcluster-reboot-maint.txt"))
    assert node is not None
    assert node.name == "queue1-st-compute-resource-1-1"
    assert node.state == "DOWN+CLOUD+REBOOT_ISSUED" and node.word == "down"
    assert node.reason == "Reboot ASAP : reboot issued"  # not the Comment= after it
    assert node.reason_by == "slurm"


def test_not_a_node():
    assert parse_scontrol_node("Node nosuch not found\n") is None
    assert parse_scontrol_node("") is None


def test_hostile_reason_is_cleaned_once():
    node = parse_scontrol_node("NodeName=n1 State=IDLE+DRAIN Reason=\x1b]0;pwned\x07 x [bob@2026-01-01T00:00:00]")
    assert node is not None and "\x1b" not in node.reason and "\x07" not in node.reason


def test_drain_reason_is_one_line_prefixed_and_names_the_operator():
    text = drain_reason("GPU 3 at 91 °C\nsecond line", "alice")
    assert text == f"{DLTUI_REASON_PREFIX} GPU 3 at 91 °C␊second line [alice]"
    assert "\n" not in text


def test_slurm_name_defaults_to_the_short_host_name_and_maps_with_host():
    assert slurm_name_for("gpu07.cluster.example", None) == "gpu07"
    assert slurm_name_for("gpu07", "{host}-ib") == "gpu07-ib"
    assert slurm_name_for("gpu07", "node007") == "node007"


def test_kubectl_node_ready_uncordoned_minikube():
    node = parse_kubectl_node(_read("kubectl-get-node-o-json_minikube-v1.15_k9s.json"))
    assert node is not None
    assert (node.name, node.ready, node.unschedulable, node.taints, node.word) == ("minikube", True, False, (), "ready")


def test_kubectl_node_cordoned_and_tainted_derived_from_the_capture():
    obj = json.loads(_read("kubectl-get-node-o-json_minikube-v1.15_k9s.json"))
    taint = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    obj["spec"] = {"unschedulable": True, "taints": [taint]}
    node = parse_kubectl_node(json.dumps(obj))
    assert node is not None
    assert node.word == "cordoned" and node.taints == ("node.kubernetes.io/unschedulable:NoSchedule",)
    assert SchedulerView(kube=node).cell() == "cordoned taints node.kubernetes.io/unschedulable:NoSchedule"


def test_kubectl_answer_that_is_not_a_node():
    assert parse_kubectl_node("error: the server doesn't have a resource type") is None
    assert parse_kubectl_node('{"kind": "Pod"}') is None
