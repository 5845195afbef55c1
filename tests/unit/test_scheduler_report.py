"""The scheduler's view as ``dltui snapshot`` (text, JSON) and ``dltui export`` say it, from real
captures: our lab's ``scontrol show node -o`` of a node NHC drained while a job ran, and a real
``kubectl get node -o json`` (provenance: tests/fixtures/scheduler/PROVENANCE.md); and the poller
reading a group's ``kubernetes_node = "{host}"`` through a FAKE kubectl under the name the
cordon action uses."""

from __future__ import annotations

import json
from pathlib import Path

from dltui.core.scheduler import (
    SchedulerView,
    parse_kubectl_node,
    parse_scontrol_node,
    view_dict,
    view_lines,
    view_states,
)
from dltui.core.state import FleetState
from dltui.export.metrics import render
from dltui.report_text import render as render_text
from dltui.snapshot import report
from dltui.transport.command import LocalRunner
from dltui.transport.scheduler import NO_SLURM, SchedTarget, SchedulerPoller

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scheduler"
NHC = (FIXTURES / "scontrol-show-node-oneliner_dltui-lab-22.05.8-mixed-drain-nhc.txt").read_text()
KUBE = (FIXTURES / "kubectl-get-node-o-json_minikube-v1.15_k9s.json").read_text()
REPO = Path(__file__).resolve().parents[2]


def _view() -> SchedulerView:
    return SchedulerView(parse_scontrol_node(NHC), parse_kubectl_node(KUBE))


def test_text_lines_name_the_word_the_reason_and_slurms_own_state():
    assert view_lines(_view()) == [
        "slurm: draining — NHC: check_hw_ib failed (vm MIXED+DRAIN)",
        f"kubernetes: ready ({parse_kubectl_node(KUBE).name})",
    ]
    assert view_lines(None) == [] and view_lines(SchedulerView(problem=NO_SLURM)) == []  # nothing to say
    assert view_lines(SchedulerView(problem="scontrol: Unable to contact slurm controller")) == [
        "scheduler: n/a — scontrol: Unable to contact slurm controller"]


def test_json_object_follows_the_documented_fields():
    doc = view_dict(_view())
    assert set(doc) == {"slurm", "kubernetes", "problem"} and doc["problem"] is None
    assert doc["slurm"] == {"name": "vm", "state": "MIXED+DRAIN", "word": "draining", "drained": True,
                            "reason": "NHC: check_hw_ib failed", "reason_by": "root",
                            "reason_at": "2026-12-06T04:38:15"}
    assert set(doc["kubernetes"]) == {"name", "word", "ready", "ready_reason", "unschedulable", "taints"}
    assert view_dict(None) is None
    json.dumps(doc)  # plain JSON


def test_snapshot_report_and_exporter_carry_the_view_and_never_the_reason_as_a_label():
    fleet = FleetState(["gpu07"])
    fleet.on_scheduler("gpu07", _view())
    assert report(fleet)["nodes"][0]["scheduler"]["slurm"]["word"] == "draining"
    assert "  slurm: draining — NHC: check_hw_ib failed (vm MIXED+DRAIN)" in render_text(fleet).splitlines()
    series = [line for line in render(fleet).splitlines() if line.startswith("dltui_node_scheduler_info")]
    assert series == [
        'dltui_node_scheduler_info{node="gpu07",scheduler="slurm",state="draining"} 1',
        'dltui_node_scheduler_info{node="gpu07",scheduler="kubernetes",state="ready"} 1',
    ]
    assert view_states(None) == [] and "NHC" not in render(fleet).split("# HELP dltui_node_scheduler_info")[1]


async def test_poller_reads_kubernetes_under_the_groups_host_mapping_fake_kubectl(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{REPO / 'tests' / 'fakes'}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("FAKE_KUBECTL_CAPTURE", str(FIXTURES / "kubectl-get-node-o-json_minikube-v1.15_k9s.json"))
    monkeypatch.setenv("FAKE_KUBECTL_STATE", str(tmp_path / "kube-state.json"))
    monkeypatch.setenv("FAKE_KUBECTL_LOG", str(tmp_path / "kubectl.log"))
    monkeypatch.setenv("FAKE_KUBECTL_NODES", "k8s-gpu07")
    target = SchedTarget(kube_node="k8s-{host}", slurm=False)
    poller = SchedulerPoller(LocalRunner(), LocalRunner(), {"gpu07.example": target})
    view, _ = await poller.read("gpu07.example")
    assert view.kube is not None and view.problem == "", view.problem
    assert "get node k8s-gpu07 -o json" in (tmp_path / "kubectl.log").read_text()  # as cordon names it
    assert target.kube_name("gpu07.example") == "k8s-gpu07"
