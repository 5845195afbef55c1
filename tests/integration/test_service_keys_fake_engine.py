"""The node screen's keys for the training container and Kubernetes, and the container pane
beside the unit pane: the dashboard on this machine (in process) with a group's containers read
through the FAKE container engine CLI (tests/fakes/container-engine, a real ``docker inspect``
capture) and its Kubernetes node through the FAKE kubectl (a real ``kubectl get node -o json``
capture), both first on PATH; no engine or cluster runs here."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.integration.sshd import REPO

FIXTURES = REPO / "tests" / "fixtures" / "scheduler"
DOCKER_CAPTURE = FIXTURES / "docker-engine-api-container-inspect_portainer-running_watchtower.json"
KUBE_CAPTURE = FIXTURES / "kubectl-get-node-o-json_minikube-v1.15_k9s.json"
UNIT = "dltui-c2-absent-trainer.service"  # a unit this machine does not have: the pane says so


@pytest.fixture
def fakes(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy(REPO / "tests" / "fakes" / "container-engine", bin_dir / "docker")
    shutil.copy(REPO / "tests" / "fakes" / "kubectl", bin_dir / "kubectl")
    (tmp_path / "state.json").write_text(json.dumps({"trainer": {"policy": "no", "RestartCount": 1}}))
    for key, value in {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / ".config"), "XDG_STATE_HOME": str(tmp_path / ".state"),
        "FAKE_ENGINE_CAPTURE_DOCKER": str(DOCKER_CAPTURE), "FAKE_ENGINE_STATE": str(tmp_path / "state.json"),
        "FAKE_ENGINE_NAMES": "trainer", "FAKE_KUBECTL_CAPTURE": str(KUBE_CAPTURE),
        "FAKE_KUBECTL_STATE": str(tmp_path / "kube-state.json"), "FAKE_KUBECTL_NODES": "kgpu01",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("DLTUI_CONFIG", raising=False)
    config = tmp_path / "config.toml"
    config.write_text(
        '[groups.here]\nhosts = ["localhost"]\n'
        f'units = ["{UNIT}"]\ncontainers = ["trainer"]\nkubernetes_node = "kgpu01"\n'
    )
    return config


async def _dashboard(config, size, body):
    from dltui import cli, wiring

    settings = cli.settings(cli.CommonOptions(config=str(config), interval_s=0.5))
    app, fleet = wiring.dashboard_app(settings, wiring.Hosts(("localhost",)))
    with fleet:
        async with app.run_test(size=size) as pilot:
            async def until(check, what):
                for _ in range(300):
                    if check():
                        return
                    await pilot.pause(0.1)
                raise AssertionError(f"never: {what}")

            await body(app, pilot, until)


async def test_r_restarts_the_training_container_and_o_cordons_from_the_node_screen_fake_engine(fakes):
    from dltui.ui.screens import ConfirmScreen
    from dltui.ui.widgets import ContainerPane

    async def body(app, pilot, until):
        state = app.fleet.nodes["localhost"]
        await until(lambda: state.sample is not None and state.sample.containers, "the container read")
        screen = app.screen
        await until(lambda: screen.check_action("container", ("restart",)), "r offered")
        footer = {b.key: b.description for b in (a[1] for a in screen.active_bindings.values()) if b.show}
        assert footer.get("r") == "Restart ctr" and "x" not in footer  # stop / start: in the help, not the footer
        await pilot.press("r")
        await until(lambda: isinstance(app.screen, ConfirmScreen), "the confirm dialog")
        assert app.screen.lines == [("localhost", "timeout -k 2 100 docker restart trainer")]  # the exact line
        await pilot.press("y")
        await until(lambda: "localhost" in app.actions.results, "the result")
        result = app.actions.results["localhost"]
        assert result.ok and result.action == "restart container trainer", result.message
        pane = screen.query_one(ContainerPane)
        await until(lambda: (pane.last_action or "").startswith("restart container trainer: ok"), "said in its pane")

        await until(lambda: state.scheduler is not None and state.scheduler.kube is not None, "kubectl's view")
        await until(lambda: screen.check_action("sched", ("cordon",)), "O offered")
        await pilot.press("O")
        await until(lambda: isinstance(app.screen, ConfirmScreen), "the cordon dialog")
        assert app.screen.lines == [("localhost", "(here) kubectl cordon kgpu01")]  # this machine's kubectl
        await pilot.press("n")  # cancelled: nothing sent

    await _dashboard(fakes, (160, 48), body)


@pytest.mark.parametrize(("width", "beside"), [(160, True), (120, False)])
async def test_the_container_pane_sits_beside_the_unit_pane_where_the_width_allows_fake_engine(fakes, width, beside):
    from dltui.ui.widgets import ContainerPane, UnitPane

    async def body(app, pilot, until):
        state = app.fleet.nodes["localhost"]
        await until(lambda: state.sample is not None and state.sample.containers and state.sample.units, "both read")
        unit, ctr = app.screen.query_one(UnitPane), app.screen.query_one(ContainerPane)
        await until(lambda: unit.display and ctr.display and ctr.region.width > 0, "both panes shown")
        await pilot.pause(0.2)
        if beside:
            assert ctr.region.y == unit.region.y and ctr.region.x >= unit.region.right
            assert abs(ctr.region.width - unit.region.width) <= 1  # twins: half the width each
        else:
            assert ctr.region.y >= unit.region.bottom and ctr.region.x == unit.region.x

    await _dashboard(fakes, (width, 48), body)
