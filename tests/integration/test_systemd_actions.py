"""Unit actions against a real systemd (see systemd_node.py): over real sshd, as a non-root
operator with sudo -n, verified against InvocationID / ActiveState / NRestarts, audited."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
import sys
import time

import pytest

from dltui.actions.audit import AuditLog
from dltui.actions.policy import (
    FAILED,
    NOT_PERMITTED,
    OK,
    REFUSED,
    TIMEOUT,
    UNREACHABLE,
    ActionSettings,
)
from dltui.actions.service import ActionService
from dltui.transport.command import TIMED_OUT, LocalRunner
from dltui.transport.ssh.commands import SshCommands
from dltui.transport.ssh.options import SshOptions

from .systemd_node import SYSTEMCTL

pytestmark = pytest.mark.systemd

FAST = ActionSettings(settle_s=2.0, start_wait_s=15.0, timeout_s=20.0)


@pytest.fixture
def client(sd_nodes, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    nodes, config = sd_nodes
    return (
        nodes,
        SshOptions(ssh_config=config),
        AuditLog(tmp_path / "state" / "dltui" / "audit.jsonl"),
    )


def _service(options, audit, settings=FAST):
    commands = SshCommands(options)
    return commands, ActionService(commands, settings, audit)


async def _with(options, audit, job, settings=FAST):
    commands, service = _service(options, audit, settings)
    try:
        return await job(service)
    finally:
        await commands.close()


def test_host_tmp_is_untouched_by_the_systemd_nodes(sd_nodes):
    nodes, _ = sd_nodes
    for n in nodes:
        assert n.canary_intact()
        assert n.exec(["stat", "-f", "-c", "%T", "/"]).stdout.strip() == "overlayfs"
        assert n.exec(["systemctl", "is-system-running"], check=False).stdout.strip() in (
            "running",
            "degraded",
        )


def test_restart_as_operator_via_sudo_is_verified_by_a_new_invocation(client):
    nodes, options, audit = client
    node = nodes[0]
    before = node.show("dl_train.service", "InvocationID")
    result = asyncio.run(
        _with(options, audit, lambda s: s.unit_change("sdnode0", "restart", "dl_train.service"))
    )
    assert result.outcome == OK, result
    after = node.show("dl_train.service", "InvocationID")
    assert after != before and result.unit.invocation_id == after
    assert node.show("dl_train.service", "ActiveState") == "active"
    assert result.argv == (
        "timeout",
        "-k",
        "2",
        "20",
        "sudo",
        "-n",
        SYSTEMCTL,
        "restart",
        "dl_train.service",
    )
    entry = audit.entries()[-1]
    assert (
        entry["node"] == "sdnode0" and entry["outcome"] == OK and entry["argv"] == list(result.argv)
    )
    assert entry["user"] and entry["duration_s"] > 0


def test_a_unit_that_fails_to_start_is_reported_with_its_journal(client):
    nodes, options, audit = client
    result = asyncio.run(
        _with(options, audit, lambda s: s.unit_change("sdnode0", "restart", "broken.service"))
    )
    assert result.outcome == FAILED
    assert "restarted but failed" in result.message and "Result=" in result.message
    assert any("FileNotFoundError: /data/imagenet/train" in line for line in result.details), (
        result.details
    )


UNUSUAL_UNITS = ("dl_eval.service", "eval@1.service", "dl\\x2dsmoke.service")  # plain, instance, escaped


@pytest.mark.parametrize("unit", UNUSUAL_UNITS)
def test_sudo_refusal_says_the_command_once_and_the_suggested_line_works_verbatim(client, unit):
    """sudo matches arguments with fnmatch: the line dltui prints, installed as printed, must
    allow exactly this command for every name systemd accepts (an instance, a \\x2d escape)."""
    nodes, options, audit = client
    node = nodes[0]
    original = node.sudoers_text()
    try:
        refused = asyncio.run(_with(options, audit, lambda s: s.unit_change("sdnode0", "start", unit)))
        assert refused.outcome == NOT_PERMITTED
        assert "a password is required" in refused.message and "never types a password" in refused.message
        line = refused.details[0]
        assert line.startswith(f"ops ALL=(root) NOPASSWD: {SYSTEMCTL} start ")
        said = "\n".join([refused.message, *refused.details])
        assert said.count(SYSTEMCTL) == 1  # the command is quoted once: in the line allowing it
        assert node.show(unit, "ActiveState") == "inactive"  # nothing happened
        node.install_sudoers_text(original + line + "\n")
        done = asyncio.run(_with(options, audit, lambda s: s.unit_change("sdnode0", "start", unit)))
        assert done.outcome == OK, done
        assert node.show(unit, "ActiveState") == "active"
        # exactly that command: not another verb, not a look-alike unit
        for argv in (["stop", unit], ["start", "eval@3.service"], ["start", "dlx2dsmoke.service"]):
            other = node.exec(["sudo", "-n", SYSTEMCTL, *argv], user="ops", check=False)
            assert other.returncode != 0, argv
    finally:
        node.install_sudoers_text(original)
        node.exec(["systemctl", "stop", unit], check=False)


def test_the_suggested_polkit_rule_works_as_printed_for_an_escaped_and_an_instance_name(client):
    """Without sudo ([actions] privilege = "polkit"): the node's own polkitd (polkitd 122,
    its JavaScript engine) runs the rule dltui prints, written to rules.d as printed."""
    nodes, options, audit = client
    node = nodes[0]
    settings = dataclasses.replace(FAST, privilege="polkit")
    rules = "/etc/polkit-1/rules.d/60-dltui-test.rules"
    try:
        for unit in ("dl\\x2dsmoke.service", "eval@2.service"):
            refused = asyncio.run(
                _with(options, audit, lambda s: s.unit_change("sdnode0", "start", unit), settings)
            )
            assert refused.outcome == NOT_PERMITTED, refused
            assert refused.message.startswith("polkit refused (")
            (rule,) = refused.details
            node.exec(["sh", "-c", f"cat >> {rules}"], input=rule + "\n")
            done = refused
            for _ in range(20):  # polkitd reloads its rules when the folder changes
                done = asyncio.run(
                    _with(options, audit, lambda s: s.unit_change("sdnode0", "start", unit), settings)
                )
                if done.outcome == OK:
                    break
                time.sleep(0.5)
            assert done.outcome == OK, done
            assert node.show(unit, "ActiveState") == "active"
            stop = node.exec(["systemctl", "--no-ask-password", "stop", unit], user="ops", check=False)
            assert stop.returncode != 0  # the rule allows that verb on that unit, nothing else
    finally:
        node.exec(["rm", "-f", rules], check=False)
        for unit in ("dl\\x2dsmoke.service", "eval@2.service"):
            node.exec(["systemctl", "stop", unit], check=False)


def test_each_failed_start_shows_that_runs_journal_and_no_earlier_run(client):
    """once.service fails at once, each run printing its own InvocationID: after every one of
    many failed starts, the lines shown are that run's (tagged or not by journald), never an
    earlier run's, under a line saying which run they are."""
    nodes, options, audit = client
    runs = []

    async def starts(service):
        out = []
        for _ in range(6):
            out.append(await service.unit_change("sdnode0", "start", "once.service"))
        return out

    for result in asyncio.run(_with(options, audit, starts)):
        assert result.outcome == FAILED, result
        run = result.unit.invocation_id
        assert run and run not in runs
        runs.append(run)
        label, *lines = result.details
        assert label.startswith(f"(this run's journal (InvocationID {run[:8]}")
        said = [line for line in lines if " run " in line and "CUDA error" in line]
        assert said and all(f"run {run}:" in line for line in said), result.details
        assert not any(earlier in line for earlier in runs[:-1] for line in lines)


def test_read_only_refuses_and_sends_nothing(client):
    nodes, options, audit = client
    before = nodes[0].show("dl_train.service", "InvocationID")
    ro = ActionSettings(read_only=True)
    result = asyncio.run(
        _with(options, audit, lambda s: s.unit_change("sdnode0", "restart", "dl_train.service"), ro)
    )
    assert result.outcome == REFUSED and result.argv is None
    assert nodes[0].show("dl_train.service", "InvocationID") == before
    assert audit.entries()[-1]["outcome"] == REFUSED


def test_a_hanging_remote_command_is_cut_off_and_reported(client):
    nodes, options, audit = client
    nodes[0].exec(["systemctl", "start", "hang.service"])  # running: its stop (so a restart) hangs
    hang = ActionSettings(settle_s=1.0, timeout_s=2.0)
    result = asyncio.run(
        _with(options, audit, lambda s: s.unit_change("sdnode0", "restart", "hang.service"), hang)
    )
    assert result.outcome == TIMEOUT, result
    assert "cut off" in result.message


def test_a_command_that_hangs_locally_is_cut_off():
    result = asyncio.run(LocalRunner().run_command("localhost", ["sleep", "30"], 0.5))
    assert result.problem == TIMED_OUT and result.exit_status is None


def _cli(args, env_home, config_text=""):
    cfg = env_home / "config.toml"
    cfg.write_text(config_text)
    env = dict(
        os.environ,
        HOME=str(env_home),
        XDG_STATE_HOME=str(env_home / "state"),
        PYTHONPATH=os.getcwd(),
    )
    env.pop("SSH_AUTH_SOCK", None)
    return subprocess.run(
        [sys.executable, "-m", "dltui", args[0], "--config", str(cfg), *args[1:]],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_cli_multi_node_restart_one_node_fails(sd_nodes, tmp_path):
    _, config = sd_nodes
    done = _cli(
        ["unit", "restart", "dl_train.service", "sdnode0", "sdnode1", "--yes", "-F", config],
        tmp_path,
        "[actions]\nsettle_s = 2\n",
    )
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("sdnode0: ok: dl_train.service restarted")
    assert lines[1].startswith("sdnode1: failed:") and "but failed" in lines[1]
    assert any("CUDA error: no device" in line for line in lines[2:]), done.stdout


def test_cli_changes_need_yes_and_read_only_refuses(sd_nodes, tmp_path):
    nodes, config = sd_nodes
    before = nodes[0].show("dl_train.service", "InvocationID")
    no_yes = _cli(["unit", "restart", "dl_train.service", "sdnode0", "-F", config], tmp_path)
    assert no_yes.returncode == 1 and "--yes" in no_yes.stdout
    assert f"sudo -n {SYSTEMCTL} restart dl_train.service" in no_yes.stdout
    flag = _cli(
        ["unit", "restart", "dl_train.service", "sdnode0", "--yes", "--read-only", "-F", config],
        tmp_path,
    )
    assert (
        flag.returncode == 1
        and flag.stdout.strip()
        == "sdnode0: refused: read-only: actions that change a node are disabled"
    )
    conf = _cli(
        ["unit", "stop", "dl_train.service", "sdnode0", "--yes", "-F", config],
        tmp_path,
        "read_only = true\n",
    )
    assert conf.returncode == 1 and "read-only" in conf.stdout
    assert nodes[0].show("dl_train.service", "InvocationID") == before


@pytest.mark.parametrize(
    "unit",
    [
        "dl_train.service; reboot",
        "$(id)",
        "`id`",
        "dl_train.service\nreboot",
        "../dl_train.service",
        "--help",
    ],
)
def test_cli_injection_is_refused_before_anything_is_sent(sd_nodes, tmp_path, unit):
    nodes, config = sd_nodes
    before = nodes[0].show("dl_train.service", "InvocationID")
    done = _cli(["unit", "restart", "--yes", "-F", config, "--", unit, "sdnode0"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("sdnode0: refused: ") and len(done.stdout.splitlines()) == 1
    assert nodes[0].show("dl_train.service", "InvocationID") == before
    assert nodes[0].exec(["systemctl", "is-system-running"], check=False).stdout.strip() in (
        "running",
        "degraded",
    )


def test_cli_status_and_logs(sd_nodes, tmp_path):
    _, config = sd_nodes
    status = _cli(["unit", "status", "dl_train.service", "sdnode0", "-F", config], tmp_path)
    assert status.returncode == 0 and "dl_train.service: active/running" in status.stdout
    missing_unit = _cli(["unit", "status", "nosuch.service", "sdnode0", "-F", config], tmp_path)
    assert missing_unit.returncode == 0 and "not-found" in missing_unit.stdout
    logs = _cli(
        ["unit", "logs", "dl_train.service", "sdnode0", "--lines", "5", "-F", config], tmp_path
    )
    assert logs.returncode == 0 and "step " in logs.stdout


def test_cli_unreachable_node_exits_3(sd_nodes, tmp_path):
    _, config = sd_nodes
    with open(config) as f:
        text = f.read()
    cfg = tmp_path / "ssh_config"
    cfg.write_text(text + "Host ghost\n  HostName 127.0.0.1\n  Port 1\n  ConnectTimeout 2\n")
    done = _cli(
        ["unit", "status", "dl_train.service", "sdnode0", "ghost", "-F", str(cfg)], tmp_path
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "ghost: unreachable:" in done.stdout


def test_signal_refuses_a_process_that_is_neither_gpu_nor_unit(client):
    nodes, options, audit = client
    sshd = nodes[0].show("ssh.service", "MainPID")
    result = asyncio.run(
        _with(options, audit, lambda s: s.signal("sdnode0", sshd, "TERM", ["dl_train.service"]))
    )
    assert result.outcome == REFUSED and "neither a GPU process" in result.message
    assert nodes[0].show("ssh.service", "MainPID") == sshd


def test_unreachable_outcome_without_connection(tmp_path):
    runner = SshCommands(SshOptions(ssh_config=str(tmp_path / "none")))
    svc = ActionService(runner, FAST, AuditLog(tmp_path / "a.jsonl"))

    async def go():
        try:
            return await svc.status("127.0.0.1:1", "dl_train.service")
        finally:
            await runner.close()

    assert asyncio.run(go()).outcome == UNREACHABLE


def _logins(node) -> int:
    """SSH logins the node's sshd has accepted so far (one per connection, not per session)."""
    out = node.exec(["journalctl", "-u", "ssh.service", "-o", "cat", "--no-pager"]).stdout
    return out.count("Accepted publickey")


async def _until(cond, what, seconds=30.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not cond():
        if loop.time() > deadline:
            raise AssertionError(f"gave up waiting for {what() if callable(what) else what}")
        await asyncio.sleep(0.1)


def test_probe_sees_the_unit_and_kills_of_its_main_pid_raise_unit_flapping(client):
    """The real probe over SSH reports the unit and its checkpoints; KILL of MainPID, sent on the
    probe's own connection, makes systemd restart it (NRestarts rises) until unit_flapping opens."""
    from dltui.config import Config
    from dltui.core.rules import build_engine
    from dltui.core.state import FleetState
    from dltui.transport.ssh.fleet import SshFleet

    nodes, options, audit = client
    name = "sdnode0-root"

    async def go():
        fleet = FleetState(
            [name], engine=build_engine(Config(rules={"unit_flapping": {"restarts": 2}}))
        )
        ssh = SshFleet(
            [name],
            1.0,
            options,
            lambda n: (("dl_train.service", "nosuch.service"), "/var/lib/ckpt/*.pt"),
        )
        task = asyncio.create_task(ssh.run(fleet))
        node = fleet.nodes[name]

        def unit():
            units = node.sample.units if node.sample else []
            return next((u for u in units if u.name == "dl_train.service"), None)

        try:
            await _until(
                lambda: unit() is not None and unit().active_state == "active",
                lambda: f"the unit ({node.status} {node.sample.units if node.sample else None})",
            )
            assert [u.name for u in node.sample.units] == [
                "dl_train.service",
                "nosuch.service",
            ]  # config order
            assert (
                node.sample.units[1].load_state == "not-found"
                and node.sample.units[1].error is None
            )
            service = ActionService(ssh, FAST, audit)
            logins = _logins(nodes[0])
            assert logins >= 1  # the probe's own connection is in the log
            for _ in range(2):
                before = unit().restarts_total
                result = await service.signal(name, unit().main_pid, "KILL", ["dl_train.service"])
                assert result.outcome == OK and "a process of dl_train.service" in result.message, (
                    result
                )
                await _until(
                    lambda before=before: unit().restarts_total == before + 1
                    and unit().active_state == "active",
                    "NRestarts to rise",
                )
            await _until(lambda: ("unit_flapping", None) in node.alerts, "unit_flapping")
            # every command went as a new session on the probe's connection: no new login
            assert _logins(nodes[0]) == logins
            # each restart (a new invocation) made the probe poll again, the checkpoint glob too
            assert node.sample.checkpoint.newest_path.startswith("/var/lib/ckpt/step-")
            assert node.sample.checkpoint.matched_files >= 1
            assert "restarted itself 2 times" in node.alerts[("unit_flapping", None)].message
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(go())


def test_the_journal_is_followed_after_its_cursor(client):
    """journalctl -u UNIT -o json once, then --after-cursor: new lines only, none twice."""
    from dltui.actions.journal import JournalFollower

    nodes, options, _ = client

    async def go():
        commands = SshCommands(options)
        try:
            for _ in range(40):  # a unit started a moment ago has fewer than 5 lines yet
                follower = JournalFollower(commands, "sdnode0", "dl_train.service", first_lines=5)
                first = await follower.poll()
                if len(first) >= 5:
                    break
                await asyncio.sleep(0.5)
            assert len(first) == 5 and follower.cursor and follower.problem is None
            later: list[str] = []
            for _ in range(60):  # the unit prints a line a second: until one is new
                await asyncio.sleep(0.5)
                later = await follower.poll()
                if later:
                    break
            assert later and not set(later) & set(first)
            assert any("step " in line for line in later)
        finally:
            await commands.close()

    asyncio.run(go())


def test_a_unit_held_by_its_start_limit_is_named_with_what_to_do(client):
    """broken.service crash-loops (Restart=always); with a start limit of 3 starts in 10 min,
    systemd soon stops restarting it, and refuses the next manual restart. systemd 252 then
    says "Job ... failed because the control process exited" and keeps Result=exit-code; only
    the journal says "Start request repeated too quickly". dltui must name the start limit,
    with reset-failed as the way out (not yet another restart)."""
    nodes, options, audit = client
    node = nodes[0]
    dropin = "/etc/systemd/system/broken.service.d/limit.conf"
    node.exec(
        [
            "sh",
            "-c",
            f"mkdir -p {os.path.dirname(dropin)} && printf "
            "'[Unit]\\nStartLimitIntervalSec=600\\nStartLimitBurst=3\\n' "
            f"> {dropin} && systemctl daemon-reload",
        ]
    )
    try:

        async def twice(service):
            first = await service.unit_change("sdnode0", "restart", "broken.service")
            await _until(
                lambda: node.show("broken.service", "ActiveState") == "failed",
                "broken.service to stop restarting (failed: its start limit was hit)",
            )
            second = await service.unit_change("sdnode0", "restart", "broken.service")
            return first, second

        first, second = asyncio.run(_with(options, audit, twice))
        assert first.outcome == FAILED and second.outcome == FAILED
        # the second restart never started: systemctl itself was refused by the rate limit
        assert second.message.startswith("systemctl restart failed: systemd refused:"), second
        assert "start limit" in second.message
        assert "systemctl reset-failed broken.service" in second.message
        assert any("repeated too quickly" in line for line in second.details), second.details
    finally:
        node.exec(
            [
                "sh",
                "-c",
                f"rm -f {dropin} && systemctl daemon-reload && "
                "{ systemctl reset-failed broken.service || true; }",
            ]
        )


def test_export_serves_the_training_unit_and_checkpoint_age_of_a_real_node(sd_nodes, tmp_path):
    """`dltui export` builds its fleet in dltui.wiring like the dashboard: the probe is given
    the group's units and checkpoint glob, so /metrics carries the unit's state (the Prometheus
    way: a series per state) and restarts, and the newest checkpoint's age; promtool accepts
    the page; SIGTERM stops it cleanly."""
    import re
    import signal
    import time
    import urllib.request

    from tests.prometheus.tools import free_port, promtool_check

    nodes, ssh_config = sd_nodes
    (tmp_path / "config.toml").write_text(
        '[groups.train]\nhosts = ["sdnode0"]\nunits = ["dl_train.service"]\ncheckpoint = "/var/lib/ckpt/*.pt"\n'
    )
    port = free_port()
    env = dict(os.environ, HOME=str(tmp_path), XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("SSH_AUTH_SOCK", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "dltui", "export", "sdnode0", "-F", ssh_config, "--config",
         str(tmp_path / "config.toml"), "--listen", f"127.0.0.1:{port}", "--interval", "0.5"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    page = ""
    try:
        deadline = time.monotonic() + 60
        while "dltui_checkpoint_age_seconds{" not in page or "dltui_unit_active{" not in page:
            assert time.monotonic() < deadline and proc.poll() is None, page[-2000:]
            time.sleep(0.5)
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
            except OSError:
                continue
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    unit = 'node="sdnode0",unit="dl_train.service"'
    assert f"dltui_unit_active{{{unit}}} 1" in page
    assert f'dltui_unit_state{{{unit},state="active"}} 1' in page
    assert f'dltui_unit_state{{{unit},state="failed"}} 0' in page
    assert re.search(rf"dltui_unit_restarts_total\{{{unit}\}} \d+", page)
    age = re.search(r'dltui_checkpoint_age_seconds\{node="sdnode0",glob="/var/lib/ckpt/\*\.pt"\} ([0-9.e+-]+)', page)
    assert age and 0 <= float(age.group(1)) < 60  # the fake job checkpoints every 5 s
    check = promtool_check(page)
    assert check.returncode == 0, check.stdout + check.stderr
    assert proc.returncode == 0, err


# -- audit first: nothing is sent without its record; a kill mid-action is recorded ---------

CALLS = "/var/log/dltui-systemctl.calls"
WITNESS = f"""#!/bin/sh
# every systemctl call that reaches the node, as who, before the real one runs
echo "$(id -un) $*" >> {CALLS}
exec {SYSTEMCTL} "$@"
"""


def _audit_lines(home) -> list[dict]:
    import json

    path = home / "state" / "dltui" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def test_cli_refuses_when_the_audit_log_cannot_be_written_and_systemctl_sees_no_call(
    sd_nodes, tmp_path
):
    """A systemctl on the node's PATH that logs every call before running the real one, allowed
    by sudoers as the real one is. With the audit log writable a restart reaches it (the
    witness works); with a folder where the log file goes (root ignores file modes) the CLI
    refuses with one line and exit 1, and the witness logs no call at all."""
    nodes, config = sd_nodes
    node = nodes[0]
    original = node.sudoers_text()
    node.exec(
        ["sh", "-c", "cat > /usr/local/bin/systemctl && chmod 755 /usr/local/bin/systemctl"],
        input=WITNESS,
    )
    node.install_sudoers_text(
        original + "ops ALL=(root) NOPASSWD: /usr/local/bin/systemctl restart dl_train.service\n"
    )
    args = ["unit", "restart", "dl_train.service", "sdnode0", "--yes", "-F", config]
    try:
        node.exec(["sh", "-c", f": > {CALLS}"])
        works = _cli(args, tmp_path, "[actions]\nsettle_s = 1\n")
        assert works.returncode == 0, works.stdout + works.stderr
        assert "root restart dl_train.service" in node.exec(["cat", CALLS]).stdout

        before = node.show("dl_train.service", "InvocationID")  # (through the witness too)
        node.exec(["sh", "-c", f": > {CALLS}"])
        log = tmp_path / "state" / "dltui" / "audit.jsonl"
        log.unlink()
        log.mkdir()
        refused = _cli(args, tmp_path, "[actions]\nsettle_s = 1\n")
        assert refused.returncode == 1, refused.stdout + refused.stderr
        (line,) = refused.stdout.splitlines()
        assert line.startswith("sdnode0: refused: cannot write the audit log ")
        assert line.endswith("; nothing was sent") and str(log) in line
        assert "Traceback" not in refused.stderr
        assert node.exec(["cat", CALLS]).stdout == ""  # not even the unit's state was read
        assert node.show("dl_train.service", "InvocationID") == before
    finally:
        node.install_sudoers_text(original)
        node.exec(["rm", "-f", "/usr/local/bin/systemctl", CALLS])


@pytest.mark.parametrize("signum", [2, 15], ids=["ctrl-c", "sigterm"])
def test_cli_killed_during_the_settle_time_records_interrupted(sd_nodes, tmp_path, signum):
    """The restart is sent and the unit restarted; while dltui waits out the settle time, Ctrl-C
    (SIGINT) or SIGTERM: the audit log gets the outcome ``interrupted`` (same id as the intent,
    sent) before dltui exits 128+signal, with one line and no traceback."""
    import signal as signals
    import time

    nodes, config = sd_nodes
    before = nodes[0].show("dl_train.service", "InvocationID")
    cfg = tmp_path / "config.toml"
    cfg.write_text("[actions]\nsettle_s = 120\n")
    env = dict(
        os.environ, HOME=str(tmp_path), XDG_STATE_HOME=str(tmp_path / "state"),
        PYTHONPATH=os.getcwd(),
    )
    env.pop("SSH_AUTH_SOCK", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "dltui", "unit", "restart", "dl_train.service", "sdnode0",
         "--yes", "-F", config, "--config", str(cfg)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while nodes[0].show("dl_train.service", "InvocationID") == before or not (
            nodes[0].show("dl_train.service", "ActiveState") == "active"
        ):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)
        time.sleep(1.0)  # verified active, now settling (120 s)
        assert proc.poll() is None
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signum, out + err
    assert "Traceback" not in err and signals.Signals(signum).name in err
    intent, outcome = _audit_lines(tmp_path)
    assert intent["outcome"] == "intent" and outcome["id"] == intent["id"]
    assert outcome["outcome"] == "interrupted" and outcome["sent"] is True
    assert outcome["argv"] == intent["argv"] and outcome["argv"][-2:] == ["restart", "dl_train.service"]
