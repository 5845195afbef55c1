"""Pure action policy: names and PIDs refused before anything is sent, exact argv, privilege,
the sudoers line, the audit log, read-only and exit codes. (Real systemd: tests/integration.)"""

import asyncio
import json
import shlex

import pytest

from dltui.actions import commands as cmd
from dltui.actions import names
from dltui.actions.audit import AuditLog
from dltui.actions.policy import (
    FAILED,
    OK,
    REFUSED,
    UNREACHABLE,
    ActionResult,
    ActionSettings,
    exit_code,
)
from dltui.actions.service import ActionService
from dltui.actions.unit_config import UnitConfig
from dltui.config import Config, ConfigError, parse
from dltui.transport.command import CommandResult, shell_line

ROOT = cmd.Identity(0, "root", "/usr/bin/systemctl", "/usr/bin/kill")
OPS = cmd.Identity(1001, "ops", "/usr/bin/systemctl", "/usr/bin/kill")


@pytest.mark.parametrize(
    "text",
    [
        "dl_train.service; reboot",
        "dl_train.service;reboot",
        "$(id)",
        "dl_train$(id).service",
        "`id`.service",
        "dl_train.service\nreboot",
        "dl_train.service\r",
        "../etc/passwd",
        "../dl_train.service",
        "--help",
        "-H",
        "-.mount",
        "dl train.service",
        "a|b.service",
        "a&b.service",
        "a>b.service",
        "'dl_train.service'",
        "dl_train.service\x00",
        "getty@.service",
        "a@b@c.service",
        "",
        "x" * 300 + ".service",
    ],
)
def test_injection_and_malformed_unit_names_are_refused(text):
    with pytest.raises(names.InvalidName):
        names.unit_name(text)


@pytest.mark.parametrize(
    "text, full",
    [
        ("dl_train.service", "dl_train.service"),
        ("dl_train", "dl_train.service"),
        ("trainer@3.service", "trainer@3.service"),
        ("sys-devices-x\\x2dy.device", "sys-devices-x\\x2dy.device"),
        ("job:a_b-c.timer", "job:a_b-c.timer"),
        ("data.mount", "data.mount"),
    ],
)
def test_valid_unit_names_pass_with_their_type(text, full):
    assert names.unit_name(text) == full


@pytest.mark.parametrize(
    "text", ["abc", "12a", "-5", "0", "012", "1", "5000000", "12 13", "$(id)", "4.2", ""]
)
def test_bad_pids_are_refused(text):
    with pytest.raises(names.InvalidName):
        names.pid(text)


def test_pids_are_integers():
    assert names.pid("4242") == 4242
    assert names.pid(77) == 77


def test_root_runs_systemctl_directly_and_others_under_sudo_n_with_the_full_path():
    base = cmd.unit_argv("restart", "dl_train.service")
    assert cmd.privileged(base, ROOT) == ["systemctl", "restart", "dl_train.service"]
    assert cmd.privileged(base, OPS) == [
        "sudo",
        "-n",
        "/usr/bin/systemctl",
        "restart",
        "dl_train.service",
    ]


def test_no_ask_password_only_on_the_polkit_path_never_under_sudo():
    base = cmd.unit_argv("restart", "dl_train.service")
    assert "--no-ask-password" not in cmd.privileged(base, OPS, cmd.SUDO)
    assert cmd.privileged(base, OPS, cmd.POLKIT) == [
        "systemctl",
        "--no-ask-password",
        "restart",
        "dl_train.service",
    ]


def test_sudoers_line_allows_exactly_the_command_run():
    argv = cmd.privileged(cmd.unit_argv("restart", "dl_train.service"), OPS)
    assert (
        cmd.sudoers_line(OPS, argv)
        == "ops ALL=(root) NOPASSWD: /usr/bin/systemctl restart dl_train.service"
    )
    odd = cmd.privileged(cmd.unit_argv("stop", "job:a.service"), OPS)
    assert cmd.sudoers_line(OPS, odd).endswith("/usr/bin/systemctl stop job\\:a.service")
    # fnmatch under sudoers: a backslash escaped for both, four in the file (real sudo: the
    # systemd-node test installs these lines verbatim)
    escaped = cmd.privileged(cmd.unit_argv("start", "dl\\x2dsmoke.service"), OPS)
    assert cmd.sudoers_line(OPS, escaped).endswith("start dl\\\\\\\\x2dsmoke.service")


def test_the_polkit_rule_names_are_javascript_string_literals():
    rule = cmd.polkit_rule(OPS, "start", "dl\\x2dsmoke.service")
    assert 'a.lookup("unit") == "dl\\\\x2dsmoke.service"' in rule  # JS reads \\ as one backslash


def test_every_argument_is_quoted_on_the_line_sent():
    argv = ["journalctl", "_SYSTEMD_INVOCATION_ID=ab", "--after-cursor", "s=1;i=2;$(x)"]
    assert shlex.split(shell_line(argv)) == argv
    assert "'s=1;i=2;$(x)'" in shell_line(argv)


def test_timeout_wraps_the_command_on_the_node_and_leaves_the_sudo_line_intact():
    argv = cmd.privileged(cmd.unit_argv("restart", "dl_train.service"), OPS)
    assert cmd.with_timeout(argv, 90) == ["timeout", "-k", "2", "90", *argv]


def test_identity_is_parsed_from_id_and_command_v():
    who = cmd.Identity.parse("1001\nops\n/usr/bin/systemctl\n/usr/bin/kill\n")
    assert who == OPS and not who.root
    assert cmd.Identity.parse("0\nroot\n\n\n").systemctl is None


def test_audit_log_is_append_only_json_lines(tmp_path):
    log = AuditLog(tmp_path / "state" / "audit.jsonl")
    log.record("gpu01", "restart dl_train.service", ["sudo", "-n", "x"], OK, "fine", 1.23456)
    log.record("gpu02", "restart x", None, REFUSED, "bad name", 0.0)
    lines = (tmp_path / "state" / "audit.jsonl").read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert set(first) == {
        "time",
        "user",
        "node",
        "action",
        "argv",
        "outcome",
        "message",
        "duration_s",
    }
    assert first["argv"] == ["sudo", "-n", "x"] and first["duration_s"] == 1.235
    assert json.loads(lines[1])["argv"] is None
    assert (tmp_path / "state" / "audit.jsonl").stat().st_mode & 0o777 == 0o600


def test_exit_codes_all_ok_some_failed_unreachable():
    ok = ActionResult("a", "x", OK, "")
    bad = ActionResult("b", "x", FAILED, "")
    gone = ActionResult("c", "x", UNREACHABLE, "")
    assert exit_code([ok, ok]) == 0
    assert exit_code([ok, bad]) == 1
    assert exit_code([ok, gone]) == 3
    assert exit_code([bad, gone]) == 1


class _Recorder:
    """Records what would be sent; answers nothing is reachable (nothing may be sent anyway)."""

    def __init__(self):
        self.sent = []

    async def run_command(self, node, argv, timeout_s):
        self.sent.append(list(argv))
        return CommandResult(tuple(argv), None, problem="unreachable", reason="test")


@pytest.mark.parametrize(
    "unit", ["dl_train.service; reboot", "$(id)", "`id`", "a\nb", "../x", "--help"]
)
def test_refused_names_send_nothing_and_are_audited(tmp_path, unit):
    runner = _Recorder()
    audit = AuditLog(tmp_path / "audit.jsonl")
    svc = ActionService(runner, ActionSettings(), audit)
    result = asyncio.run(svc.unit_change("gpu01", "restart", unit))
    assert result.outcome == REFUSED and result.argv is None
    assert runner.sent == []
    assert audit.entries()[-1]["outcome"] == REFUSED


def test_read_only_refuses_every_change_before_sending(tmp_path):
    runner = _Recorder()
    svc = ActionService(runner, ActionSettings(read_only=True), AuditLog(tmp_path / "a.jsonl"))
    for job in (svc.unit_change("n", "restart", "dl_train.service"), svc.signal("n", "4242")):
        result = asyncio.run(job)
        assert result.outcome == REFUSED and "read-only" in result.message
    assert runner.sent == []


def test_read_only_comes_from_the_config_file():
    cfg = parse({"read_only": True, "actions": {"privilege": "polkit", "settle_s": 2}})
    s = ActionSettings.from_config(cfg)
    assert s.read_only and s.privilege == "polkit" and s.settle_s == 2.0
    with pytest.raises(ConfigError, match="privilege: 'doas' is not one of sudo, polkit"):
        parse({"actions": {"privilege": "doas"}})
    with pytest.raises(ConfigError, match="unknown key 'setle_s' \\(did you mean 'settle_s'\\?\\)"):
        parse({"actions": {"setle_s": 1}})


def test_units_per_group_default_dl_train():
    cfg = parse(
        {
            "groups": {
                "train": {
                    "hosts": ["gpu0*"],
                    "units": ["trainer@1.service", "feeder"],
                    "checkpoint": "/ckpt/*.pt",
                },
                "all": {"hosts": ["*"], "units": ["other.service"]},
            }
        }
    )
    units = UnitConfig(cfg)
    assert units.for_node("gpu01") == (("trainer@1.service", "feeder.service"), "/ckpt/*.pt")
    assert units.for_node("login1") == (("other.service",), None)
    assert UnitConfig(Config()).for_node("x") == (("dl_train.service",), None)
    with pytest.raises(ConfigError, match="units"):
        UnitConfig(parse({"groups": {"g": {"hosts": ["*"], "units": ["a;b.service"]}}}))
