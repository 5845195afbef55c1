"""Reading the SSH config for a node: settings, jump routes, known_hosts files."""

import os

import pytest

from dltui.transport.hostspec import parse_destination
from dltui.transport.ssh.config import SshConfig, SshConfigError
from dltui.transport.ssh.options import SshOptions

CONFIG = """\
Host bastion
  HostName 192.0.2.10
  Port 2222
  User ops
Host inner
  HostName 10.1.0.1
  ProxyJump bastion
Host gpu*
  ProxyJump inner
  ServerAliveInterval 5
  ServerAliveCountMax 4
  IdentityFile ~/.ssh/fleet
Host loop-a
  ProxyJump loop-b
Host loop-b
  ProxyJump loop-a
Host solo
  UserKnownHostsFile none
  ConnectTimeout 3
"""


@pytest.fixture
def config(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    path = tmp_path / "ssh_config"
    path.write_text(CONFIG)
    return lambda **kw: SshConfig(SshOptions(ssh_config=str(path), **kw))


def hosts(route):
    return [d.text for d in route]


def test_settings_from_the_config_with_dltui_defaults_for_the_rest(config, tmp_path):
    s = config().settings(parse_destination("gpu07"))
    assert (s.hostname, s.port, s.proxy_jump) == ("gpu07", 22, "inner")
    assert (s.keepalive_interval_s, s.keepalive_count, s.connect_timeout_s) == (5.0, 4, 10.0)
    assert s.identity_files == (f"{tmp_path}/.ssh/fleet",)
    assert s.known_hosts_files == (f"{tmp_path}/.ssh/known_hosts",)
    b = config().settings(parse_destination("bastion"))
    assert (b.hostname, b.port, b.user, b.address) == ("192.0.2.10", 2222, "ops", "192.0.2.10:2222")


def test_user_host_port_on_the_command_line_beats_the_config(config):
    s = config().settings(parse_destination("root@bastion:22"))
    assert (s.hostname, s.port, s.user) == ("192.0.2.10", 22, "root")


def test_jump_route_follows_proxyjump_of_each_first_hop(config):
    cfg = config()
    assert hosts(cfg.route(parse_destination("gpu07"))) == ["bastion", "inner"]
    assert hosts(cfg.route(parse_destination("inner"))) == ["bastion"]
    assert hosts(cfg.route(parse_destination("solo"))) == []


def test_dash_j_replaces_the_nodes_proxyjump_but_its_first_hop_keeps_its_own(config):
    assert hosts(config(jump="inner,alice@10.9.9.9:2200").route(parse_destination("gpu07"))) == [
        "bastion",
        "inner",
        "alice@10.9.9.9:2200",
    ]


def test_proxyjump_loop_is_an_error_not_a_hang(config):
    with pytest.raises(SshConfigError, match="ProxyJump chain longer than 8 hops"):
        config().route(parse_destination("loop-a"))


def test_known_hosts_none_disables_checking_and_dash_known_hosts_wins(config):
    assert config().settings(parse_destination("solo")).known_hosts_files is None
    assert config().settings(parse_destination("solo")).connect_timeout_s == 3.0
    assert config(known_hosts="/srv/kh").settings(parse_destination("solo")).known_hosts_files == ("/srv/kh",)


def test_a_changed_config_is_read_again(config, tmp_path):
    cfg = config()
    assert cfg.settings(parse_destination("solo")).port == 22
    path = tmp_path / "ssh_config"
    path.write_text(CONFIG.replace("Host solo\n", "Host solo\n  Port 2022\n"))
    os.utime(path, ns=(1, 1))  # a different stamp even within the clock's resolution
    assert cfg.settings(parse_destination("solo")).port == 2022


def test_missing_config_given_with_dash_f_is_an_error(tmp_path):
    with pytest.raises(SshConfigError, match="cannot read SSH config"):
        SshConfig(SshOptions(ssh_config=str(tmp_path / "nope"))).settings(parse_destination("x"))
