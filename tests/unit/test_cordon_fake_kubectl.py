"""cordon / uncordon and the Kubernetes half of the scheduler's view, through a FAKE kubectl on
the operator's PATH replaying a real ``kubectl get node -o json`` capture (no cluster here):
confirmed, audited intent-first, verified, refused under read-only; the view read locally."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dltui.actions.audit import AuditLog
from dltui.actions.policy import ActionSettings
from dltui.actions.scheduler import SchedulerActions
from dltui.actions.service import ActionService
from dltui.transport.command import LocalRunner
from dltui.transport.scheduler import SchedTarget, SchedulerPoller

REPO = Path(__file__).resolve().parents[2]
CAPTURE = REPO / "tests" / "fixtures" / "scheduler" / "kubectl-get-node-o-json_minikube-v1.15_k9s.json"


@pytest.fixture
def fake_kubectl(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{REPO / 'tests' / 'fakes'}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("FAKE_KUBECTL_CAPTURE", str(CAPTURE))
    monkeypatch.setenv("FAKE_KUBECTL_STATE", str(tmp_path / "kube-state.json"))
    monkeypatch.setenv("FAKE_KUBECTL_LOG", str(tmp_path / "kubectl.log"))
    monkeypatch.setenv("FAKE_KUBECTL_NODES", "gpu01")
    return tmp_path


def _actions(tmp_path, read_only=False):
    audit = AuditLog(tmp_path / "audit.jsonl")
    service = ActionService(LocalRunner(), ActionSettings(read_only=read_only), audit)
    return SchedulerActions(service, LocalRunner()), audit


def _log(tmp_path) -> list[str]:
    path = tmp_path / "kubectl.log"
    return path.read_text().splitlines() if path.exists() else []


async def test_cordon_then_uncordon_fake_kubectl_verified_and_audited(fake_kubectl):
    actions, audit = _actions(fake_kubectl)
    done = await actions.kube("gpu01.example", "cordon", "gpu01", confirmed=True)
    assert done.ok, done.message
    assert done.message == "gpu01 reads cordoned taints node.kubernetes.io/unschedulable:NoSchedule"
    assert done.argv == ("kubectl", "cordon", "gpu01")
    lines = [json.loads(line) for line in (fake_kubectl / "audit.jsonl").read_text().splitlines()]
    assert [r["outcome"] for r in lines] == ["intent", "ok"]
    back = await actions.kube("gpu01.example", "uncordon", "gpu01", confirmed=True)
    assert back.ok and back.message == "gpu01 reads ready"
    assert _log(fake_kubectl) == [
        "kubectl cordon gpu01", "kubectl get node gpu01 -o json",
        "kubectl uncordon gpu01", "kubectl get node gpu01 -o json",
    ]


async def test_cordon_unconfirmed_or_read_only_sends_nothing_fake_kubectl(fake_kubectl):
    actions, _ = _actions(fake_kubectl)
    asked = await actions.kube("gpu01", "cordon", "gpu01", confirmed=False)
    assert asked.outcome == "refused" and "would run here: kubectl cordon gpu01" in asked.message
    locked, _ = _actions(fake_kubectl, read_only=True)
    refused = await locked.kube("gpu01", "cordon", "gpu01", confirmed=True)
    assert refused.outcome == "refused" and "read-only" in refused.message
    bad = await actions.kube("gpu01", "cordon", "--all", confirmed=True)
    assert bad.outcome == "refused" and "not a Kubernetes node name" in bad.message
    assert _log(fake_kubectl) == []


async def test_cordon_of_an_unknown_node_fails_with_kubectls_words_fake_kubectl(fake_kubectl):
    actions, _ = _actions(fake_kubectl)
    done = await actions.kube("gpu09", "cordon", "gpu09", confirmed=True)
    assert done.outcome == "failed"
    assert 'nodes "gpu09" not found' in done.message


async def test_poller_reads_the_kubernetes_view_on_this_machine_fake_kubectl(fake_kubectl):
    # Slurm off for this node: only the operator's kubectl is asked, never the node
    poller = SchedulerPoller(LocalRunner(), LocalRunner(), {"gpu01": SchedTarget(kube_node="gpu01", slurm=False)})
    view, wait = await poller.read("gpu01")
    assert view.kube is not None and view.word == "ready" and view.cell() == "ready"
    assert wait == poller.interval_s
    actions, _ = _actions(fake_kubectl)
    await actions.kube("gpu01", "cordon", "gpu01", confirmed=True)
    view, _ = await poller.read("gpu01")
    assert view.word == "cordoned"


async def test_a_turn_reads_at_most_its_cap_the_longest_due_first_fake_kubectl(fake_kubectl):
    # 20 nodes live at once (a fleet coming up together): the dashboard's turn reads 8, the
    # next turn the next 8, then the last 4; none is read twice, none is left out
    names = [f"gpu{i:02d}" for i in range(1, 21)]
    poller = SchedulerPoller(
        LocalRunner(), LocalRunner(), {n: SchedTarget(kube_node=n, slurm=False) for n in names}
    )
    poller.due["gpu20"] = -1.0  # due the longest: read in the first turn
    turns: list[list[str]] = []
    for _ in range(4):
        seen: list[str] = []
        await poller.turn(lambda node, view: seen.append(node), lambda node: True, at_most=8)
        turns.append(seen)
    assert [len(t) for t in turns] == [8, 8, 4, 0]
    assert "gpu20" in turns[0]
    assert sorted(n for t in turns for n in t) == names
    assert poller.reads == 20
