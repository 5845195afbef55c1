"""The SSH config cut down per destination parses exactly like the whole file."""

import gc
import getpass
import os

import pytest
from asyncssh.config import SSHClientConfig

from dltui.transport.hostspec import parse_destination
from dltui.transport.ssh.config import SshConfig, SshConfigError
from dltui.transport.ssh.config_slice import ConfigSlicer
from dltui.transport.ssh.options import SshOptions

CONFIG = """\
# fleet config, generated
ServerAliveInterval 20
Host jump
  HostName 192.0.2.10
  Port 2222
  User ops
Host gpu01
  HostName 10.0.0.1
  ProxyJump jump
Host gpu02 "gpu03"
  HostName 10.0.0.2
Host=gpu1?
  Port 2200
Host gpu* !gpu13
  ProxyJump jump
  IdentityFile ~/.ssh/fleet
Match user ops
  ServerAliveCountMax 9
Host gpu99
  Bogus-Keyword-Here
  Port notanumber
"Host" gpu21
  User quoted-keyword
Host gpu22=gpu23
  User equals-in-patterns
Host gpu24
  SetEnv A=1\x0cPort 2222
Host *
  ConnectTimeout 7
  User = fleet
"""

HOSTS = ["jump", "gpu01", "gpu02", "gpu03", "gpu12", "gpu13", "gpu7", "other", "GPU01", "gpu21", "gpu22", "gpu23", "gpu24"]


def parse(path, host):
    return SSHClientConfig.load(None, [path], False, False, False, getpass.getuser(), (), host, ())


@pytest.fixture
def config_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    path = tmp_path / "config"
    path.write_text(CONFIG)
    return path


@pytest.mark.parametrize("host", HOSTS)
def test_a_slice_parses_to_the_same_options_as_the_whole_file(config_file, host):
    slicer = ConfigSlicer(str(config_file))
    sliced = slicer.path_for(host)
    assert sliced != str(config_file)
    if host == "gpu99":
        return
    assert parse(sliced, host).get_options(False) == parse(str(config_file), host).get_options(False)


def test_a_slice_keeps_only_the_hosts_own_blocks_and_every_line_number(config_file):
    slicer = ConfigSlicer(str(config_file))
    text = open(slicer.path_for("gpu12")).read()
    assert text.count("\n") == CONFIG.count("\n")
    kept = [line.strip() for line in text.splitlines() if line.strip()]
    assert "Host=gpu1?" in kept and "Host gpu* !gpu13" in kept and "Match user ops" in kept
    assert "HostName 10.0.0.1" not in kept and "Port notanumber" not in kept
    assert slicer.path_for("gpu12") == slicer.path_for("gpu12")  # written once


def test_an_error_in_the_hosts_own_block_names_the_users_file_and_line(config_file):
    config = SshConfig(SshOptions(ssh_config=str(config_file)))
    with pytest.raises(SshConfigError) as caught:
        config.settings(parse_destination("gpu99"))
    with pytest.raises(ValueError) as whole:
        parse(str(config_file), "gpu99")
    assert str(caught.value) == f"SSH config: {whole.value}"  # the user's file, the real line
    assert f"{config_file} line 21: Invalid Port" in str(caught.value)
    assert config.settings(parse_destination("gpu12")).port == 2200  # other nodes are unaffected


@pytest.mark.parametrize(
    "keyword", ["Include ~/.ssh/conf.d/*", "CanonicalizeHostname yes", 'Host "unbalanced', "Host", 'Host x\n  User "unbalanced']
)
def test_configs_the_slicer_cannot_judge_are_handed_over_whole(config_file, keyword):
    config_file.write_text(CONFIG + keyword + "\n")
    assert ConfigSlicer(str(config_file)).path_for("gpu01") == str(config_file)


def test_the_slices_go_away_with_the_slicer(config_file):
    slicer = ConfigSlicer(str(config_file))
    directory = os.path.dirname(slicer.path_for("gpu01"))
    assert os.path.isdir(directory)
    del slicer
    gc.collect()
    assert not os.path.exists(directory)


def test_slices_live_in_the_users_runtime_dir_when_there_is_one(config_file, tmp_path, monkeypatch):
    runtime = tmp_path / "run-user"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    sliced = ConfigSlicer(str(config_file)).path_for("gpu01")
    assert os.path.dirname(os.path.dirname(sliced)) == str(runtime)
