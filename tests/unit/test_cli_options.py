"""Every subcommand has one shape: its parsed line becomes typed, frozen options at the
``dltui.cli`` boundary, and ``dltui.wiring`` runs it with the settings and those options
(no argparse Namespace below ``cli``)."""

from __future__ import annotations

import dataclasses

import pytest

from dltui import cli, wiring
from dltui.actions.arguments import SignalOptions, UnitOptions
from dltui.burnin.arguments import AttachOptions, StartOptions, StopOptions
from dltui.export.command import ExportOptions
from dltui.ui.serve.command import ServeOptions


@pytest.fixture
def ran(monkeypatch, tmp_path):
    """What each wiring entry point was called with, instead of running it."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("DLTUI_CONFIG", raising=False)
    calls: list[tuple[str, wiring.Settings, object]] = []
    for name in ("dashboard", "snapshot", "export", "serve", "burn_in", "unit_actions"):
        def record(settings, options, name=name):
            calls.append((name, settings, options))
            return 0
        monkeypatch.setattr(wiring, name, record)
    return calls


@pytest.mark.parametrize(
    "argv, entry, options",
    [
        (["gpu01", "gpu02"], "dashboard", wiring.Hosts(("gpu01", "gpu02"))),
        (["watch", "--prometheus", "http://p:9090", "--interval", "5"], "dashboard",
         wiring.Prometheus("http://p:9090", None, 5.0, ())),
        (["demo", "--nodes", "3"], "dashboard", wiring.Demo(3, 8, 7)),
        (["replay", "rec.jsonl", "--speed", "0"], "dashboard", wiring.Replay("rec.jsonl", 0.0)),
        (["snapshot", "gpu01", "--json", "--seconds", "2"], "snapshot",
         wiring.SnapshotOptions(wiring.Hosts(("gpu01",)), 2.0, True)),
        (["export", "gpu01", "--allow-host", "a", "--allow-host", "b"], "export",
         ExportOptions(("gpu01",), "127.0.0.1:9400", ("a", "b"))),
        (["serve", "--demo", "--listen", "127.0.0.1:0", "--theme", "x"], "serve",
         ServeOptions(("--demo", "--listen", "127.0.0.1:0", "--theme", "x"), (), "127.0.0.1:0", demo=True)),
        (["unit", "logs", "a.service", "gpu01", "gpu02", "--lines", "9"], "unit_actions",
         UnitOptions("logs", "a.service", ("gpu01", "gpu02"), False, 9)),
        (["signal", "42", "gpu01", "--kill", "--yes"], "unit_actions", SignalOptions("42", "gpu01", True, True)),
        (["burn-in", "stop", "r1", "gpu01"], "burn_in", StopOptions("r1", ("gpu01",))),
        (["burn-in", "attach", "r1", "gpu01", "--report", "/tmp"], "burn_in", AttachOptions("r1", ("gpu01",), "/tmp")),
    ],
)
def test_each_subcommand_runs_with_typed_frozen_options(ran, argv, entry, options):
    assert cli.main(argv) == 0
    [(name, settings, got)] = ran
    assert (name, got) == (entry, options)
    assert isinstance(settings, wiring.Settings)
    assert dataclasses.is_dataclass(got) and type(got).__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_burn_in_start_takes_every_option_typed(ran):
    argv = ["burn-in", "gpu[01-02]", "--duration", "90m", "--gpu", "torch", "--cpu", "--disk", "/scratch",
            "--net", "gpu01", "--expected-gpus", "8", "--run-id", "r1", "--read-only"]
    assert cli.main(argv) == 0
    [(_, settings, got)] = ran
    assert got == StartOptions(
        hosts=("gpu[01-02]",), duration_s=5400, gpu="torch", cpu=True, memory=False, disk="/scratch",
        disk_size="4G", net="gpu01", net_port=5201, expected_gpus=8, preflight_s=10, post_s=10,
        launcher="auto", run_id="r1", report=".",
    )
    assert settings.config.read_only  # the shared options reach the settings


def test_the_shared_options_reach_the_settings_and_those_not_taken_keep_their_defaults(ran, tmp_path):
    key = tmp_path / "id"
    assert cli.main(["unit", "status", "a.service", "gpu01", "-i", str(key), "--read-only"]) == 0
    [(_, settings, _)] = ran
    assert settings.ssh.identity == (str(key),) and settings.config.read_only
    assert cli.REPLAY.read(cli.build_parser().parse_args(["replay", "x"])) == cli.CommonOptions()
