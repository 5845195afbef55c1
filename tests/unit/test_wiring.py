"""The composition root: every command's fleet is built by ``dltui.wiring``, with each node's
probe extras (units, checkpoint glob) from the group config, the rule engine, the GPU
inventory of real nodes only, and the recorder."""

from __future__ import annotations

import re

import pytest

from dltui import wiring
from dltui.config import ConfigError
from dltui.transport.local import LocalTransport


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for name in ("DLTUI_CONFIG", "DLTUI_INTERVAL", "DLTUI_THEME"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _config(home, text: str) -> str:
    path = home / "c.toml"
    path.write_text(text)
    return str(path)


def test_a_real_nodes_fleet_gets_its_groups_units_and_checkpoint_for_the_probe(home):
    cfg = _config(
        home,
        '[groups.here]\nhosts = ["local*"]\nunits = ["trainer.service"]\ncheckpoint = "/ckpt/*.pt"\n',
    )
    settings = wiring.load_settings(cfg, interval_s=0.5)
    with wiring.build(settings, wiring.Hosts(("localhost",))) as fleet:
        (local,) = fleet.transports
        assert isinstance(local, LocalTransport)
        assert (local.units, local.checkpoint, local.interval_s) == (("trainer.service",), "/ckpt/*.pt", 0.5)
        assert fleet.inventory is not None and fleet.state.engine.inventory is fleet.inventory
        assert fleet.recorder is None and fleet.sink is fleet.state
        assert list(fleet.state.nodes) == ["localhost"]


def test_a_demo_or_a_replay_never_touches_the_gpu_inventory_and_runs_on_its_own_clock(home):
    settings = wiring.load_settings(None)
    fleet = wiring.build(settings, wiring.Demo(nodes=3, gpus=2, seed=1))
    (demo,) = fleet.transports
    assert fleet.inventory is None and fleet.state.engine.inventory is None
    assert fleet.state.clock == demo.clock and len(fleet.state) == 3


def test_the_recorder_sits_between_the_transports_and_the_fleet(home):
    settings = wiring.load_settings(None, record=str(home / "rec.jsonl"))
    with wiring.build(settings, wiring.Demo(nodes=2)) as fleet:
        assert fleet.recorder is not None and fleet.sink is fleet.recorder
    assert fleet.recorder is None and (home / "rec.jsonl").exists()  # closed with the fleet


@pytest.mark.parametrize(
    "text, words",
    [
        ("[rules.gpu_tmp_high]\nwarning = 80\n", "unknown rule 'gpu_tmp_high' (did you mean 'gpu_temp_high'?)"),
        ('[groups.g]\nhosts = ["*"]\nunits = ["a;reboot"]\n', "[groups.g] units"),
    ],
)
def test_what_the_schema_leaves_to_rules_and_units_is_checked_before_any_command_starts(home, text, words):
    with pytest.raises(ConfigError, match=re.escape(words)):
        wiring.load_settings(_config(home, text))


def test_the_command_line_goes_over_the_file_and_reaches_the_ssh_options(home):
    cfg = _config(home, 'interval = 2\nread_only = false\n[ssh]\nconnect_timeout = 3\nidentity = ["~/k1"]\n')
    s = wiring.load_settings(cfg, interval_s=0.25, read_only=True, jump="bastion", identity=["~/k2"])
    assert s.config.interval_s == 0.25 and s.config.read_only is True
    assert s.ssh.jump == "bastion" and s.ssh.identity == ("~/k2",) and s.ssh.connect_timeout_s == 3.0
    assert wiring.load_settings(cfg).ssh.identity == ("~/k1",)


def test_prometheus_and_hosts_together_is_a_usage_error(home):
    settings = wiring.load_settings(None)
    with pytest.raises(ConfigError, match="not both"):
        wiring.build(settings, wiring.Prometheus("http://127.0.0.1:9", hosts=("gpu01",)))
