"""The command line as a user meets it: real subprocesses of `python -m dltui`."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dltui import __version__

ROOT = Path(__file__).resolve().parents[2]


def dltui(*args, env=None, timeout=60):
    return subprocess.run([sys.executable, "-m", "dltui", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env=env)


@pytest.fixture
def home_env(tmp_path, monkeypatch):
    import os

    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"))
    env.pop("DLTUI_CONFIG", None)
    return env


def test_version():
    out = dltui("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"dltui {__version__}"


def test_help_describes_every_subcommand():
    out = dltui("--help")
    assert out.returncode == 0
    for command in ("watch", "snapshot", "demo", "replay"):
        assert command in out.stdout
    assert "0 ok, 1 warning, 2 critical, 3 unknown" in out.stdout


def test_snapshot_json_of_this_machine_follows_the_schema(home_env):
    out = dltui("snapshot", "--json", "--seconds", "1.5", "--interval", "0.5", env=home_env)
    doc = json.loads(out.stdout)
    assert doc["version"] == 1
    (node,) = doc["nodes"]
    assert node["name"] == "localhost" and node["status"] == "ok" and node["error"] is None
    assert node["scheduler"] is None or set(node["scheduler"]) == {"slurm", "kubernetes", "problem"}
    sample = node["sample"]
    assert set(sample) == {"time", "cpu", "memory", "pressure", "tasks", "disks", "filesystems", "networks",
                           "ib_ports", "gpus", "nvlinks", "units", "checkpoint", "drives", "containers"}
    assert sample["gpus"] == []  # no GPU here: an empty list, not an error
    assert sample["ib_ports"] == [] and sample["nvlinks"] == []  # no HCA, no NVLink: none, not an error
    assert node["facts"]["gpu_note"] == "no NVIDIA driver found"
    assert isinstance(node["facts"]["stack"]["reboot_reasons"], list)  # read from this machine's files
    meminfo = Path("/proc/meminfo").read_text().split("\n")[0].split()
    assert sample["memory"]["total_bytes"] == int(meminfo[1]) * 1024
    assert any(fs["mountpoint"] == "/" for fs in sample["filesystems"])
    assert 0 <= sample["cpu"]["total_percent"] <= 100
    assert len(sample["cpu"]["cores"]) == node["facts"]["cpu_count"]
    assert all(a["severity"] in ("info", "warning", "critical") for a in node["alerts"])
    worst = {a["severity"] for a in node["alerts"]}
    expected = 2 if "critical" in worst else 1 if "warning" in worst else 0
    assert out.returncode == expected


def test_snapshot_text_report_names_the_node_and_its_parts(home_env):
    out = dltui("snapshot", "--seconds", "1", "--interval", "0.5", env=home_env)
    assert out.stdout.startswith("localhost: ok")
    assert "gpus: none" in out.stdout and "no NVIDIA driver found" in out.stdout


def test_a_broken_config_file_is_one_plain_line_and_unknown_for_snapshot(home_env, tmp_path):
    """Under monitoring, 2 means CRITICAL: a config typo is UNKNOWN (3), never a page."""
    bad = tmp_path / "bad.toml"
    bad.write_text("[rules.gpu_temp_high]\nwarnign = 80\n")
    out = dltui("snapshot", "--config", str(bad), env=home_env)
    assert out.returncode == 3
    assert out.stderr.startswith("dltui: ") and len(out.stderr.strip().splitlines()) == 1
    assert "warnign" in out.stderr
    assert dltui("snapshot", "--seconds", "abc", env=home_env).returncode == 3


def test_usage_errors_of_the_other_commands_exit_2(home_env, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("interval = = 1\n")
    out = dltui("demo", "--config", str(bad), env=home_env)
    assert out.returncode == 2 and "not valid TOML" in out.stderr
    assert dltui("demo", "--nodes", "many", env=home_env).returncode == 2


def test_a_recording_that_would_overwrite_a_file_is_refused(home_env, tmp_path):
    existing = tmp_path / "rec.jsonl"
    existing.write_text("precious\n")
    out = dltui("snapshot", "--seconds", "0.5", "--record", str(existing), env=home_env)
    assert out.returncode == 3 and "already exists" in out.stderr
    assert existing.read_text() == "precious\n"


def test_a_snapshot_shorter_than_two_samples_waits_for_the_second_one(home_env):
    """Rates need two samples: a 0.5 s snapshot at 1 Hz must still report CPU, not n/a."""
    out = dltui("snapshot", "--json", "--seconds", "0.5", "--interval", "1", env=home_env)
    (node,) = json.loads(out.stdout)["nodes"]
    assert node["status"] == "ok"
    assert node["sample"]["cpu"]["total_percent"] is not None


# -- typing and parsing ---------------------------------------------------------------------


def test_a_mistyped_subcommand_is_a_usage_error_with_the_suggestion(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    from dltui import cli

    assert cli.main(["snapshott", "--seconds", "2"]) == cli.USAGE_ERROR
    err = capsys.readouterr().err
    assert "'snapshott' is not a command (did you mean 'snapshot'?)" in err
    assert "dltui watch snapshott" in err  # how to mean the host after all


def test_a_host_of_the_ssh_config_that_looks_like_a_subcommand_is_a_host(tmp_path):
    from dltui import cli

    config = tmp_path / "ssh_config"
    config.write_text("Host gpu01 snapshott\n  HostName 127.0.0.1\nHost expor*\n  User x\n")
    cli._refuse_a_mistyped_command(["snapshott", "-F", str(config)])  # a Host alias: no error
    with pytest.raises(SystemExit):
        cli._refuse_a_mistyped_command(["exporrt", "-F", str(config)])  # a pattern names no host
    cli._refuse_a_mistyped_command(["gpu01"])  # not close to any command


def test_each_subcommands_help_shows_only_its_options_and_its_exit_codes():
    unit = dltui("unit", "--help").stdout
    for foreign in ("--interval", "--theme", "--record", "--seconds"):
        assert foreign not in unit
    assert "Exit 0 all ok; 1 some failed or were refused; 2 a usage or config error; 3" in " ".join(unit.split())
    burn_in = " ".join(dltui("burn-in", "--help").stdout.split())
    assert "Exit 0 pass, 1 warnings, 2 a failure, 3 could not run or judge" in burn_in
    assert "--theme" not in burn_in and "--record" not in burn_in
    replay = dltui("replay", "--help").stdout
    assert "--interval" not in replay and "-J DEST" not in replay and "Exit 0 when you quit" in replay
    snapshot = " ".join(dltui("snapshot", "--help").stdout.split())
    assert "Exit 0 ok, 1 warning, 2 critical, 3 unknown" in snapshot and "--theme" not in snapshot


@pytest.mark.parametrize(
    "args, code, words",
    [
        (["unit", "logs", "a.service", "gpu01", "--lines", "0"], 2, "--lines: '0': expected a whole number from 1 to 10000"),
        (["unit", "logs", "a.service", "gpu01", "--lines", "99999999"], 2, "from 1 to 10000"),
        (["snapshot", "--seconds", "nan"], 3, "--seconds: 'nan': expected a number from 0.1 to 86400"),
        (["snapshot", "--seconds", "0"], 3, "--seconds: '0'"),
        (["snapshot", "--interval", "inf"], 3, "--interval: 'inf': expected a number from 0.1 to 3600"),
        (["watch", "--interval", "nan"], 2, "--interval: 'nan'"),
        (["demo", "--nodes", "0"], 2, "--nodes: '0': expected a whole number from 1 to 4096"),
        (["demo", "--gpus", "1000"], 2, "--gpus: '1000'"),
        (["replay", "x.jsonl", "--speed", "-1"], 2, "--speed: '-1'"),
        (["burn-in", "gpu01", "--net-port", "70000"], 3, "--net-port: '70000'"),
        (["snapshot", "g" * 256], 3, "is 256 characters long: a host is at most 255"),
        (["watch", "g" * 300], 2, "a host is at most 255"),
    ],
)
def test_numbers_and_host_names_out_of_their_range_are_usage_errors(args, code, words, capsys):
    from dltui import cli

    assert cli.main(args) == code
    assert words in capsys.readouterr().err


# -- terminal habits: completion, log file --------------------------------------------------


def test_bash_completes_subcommands_options_themes_and_hosts_of_the_ssh_config(tmp_path):
    """The real bash, with the script `dltui completion bash` prints, asked as a TAB would."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text("Host gpu01 gpu02\n  HostName 127.0.0.1\nHost *\n  User ops\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "dltui").write_text(f"#!/bin/sh\nexec {sys.executable} -m dltui \"$@\"\n")
    (bindir / "dltui").chmod(0o755)
    script = """
source <(dltui completion bash)
ask() { COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}; read -ra COMP_WORDS <<< "$1"
        COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=(); _python_argcomplete dltui
        echo "$1 -> ${COMPREPLY[*]}"; }
ask "dltui sna"; ask "dltui gp"; ask "dltui snapshot gpu0"; ask "dltui demo --th"
ask "dltui demo --theme dltui-hi"; ask "dltui unit --ye"
"""
    env = dict(os.environ, HOME=str(home), PATH=f"{bindir}:{os.environ['PATH']}", PYTHONPATH=str(ROOT))
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    answers = dict(line.split(" -> ") for line in out.stdout.splitlines())
    assert answers["dltui sna"].split() == ["snapshot"], out.stderr
    assert answers["dltui gp"].split() == ["gpu01", "gpu02"]
    assert answers["dltui snapshot gpu0"].split() == ["gpu01", "gpu02"]
    assert answers["dltui demo --th"].split() == ["--theme"]
    assert answers["dltui demo --theme dltui-hi"].split() == ["dltui-high-contrast"]
    assert answers["dltui unit --ye"].split() == ["--yes"]


@pytest.mark.parametrize("shell, words", [("zsh", "compdef"), ("fish", "complete --command dltui")])
def test_zsh_and_fish_get_their_own_completion_scripts(shell, words):
    out = dltui("completion", shell)
    assert out.returncode == 0 and words in out.stdout
    assert dltui("completion", "tcsh").returncode == 2


def test_debug_logs_go_to_a_private_file_under_the_xdg_state_folder(home_env, tmp_path):
    env = dict(home_env, XDG_STATE_HOME=str(tmp_path / "state"))
    out = dltui("snapshot", "--seconds", "0.5", "--debug", env=env)
    assert out.returncode in (0, 1, 2)
    folder = tmp_path / "state" / "dltui"
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    log = folder / "dltui.log"
    assert oct(log.stat().st_mode & 0o777) == "0o600"
    assert "DEBUG" in log.read_text()
    named = tmp_path / "elsewhere.log"
    dltui("snapshot", "--seconds", "0.5", "--debug", "--log-file", str(named), env=env)
    assert named.exists() and oct(named.stat().st_mode & 0o777) == "0o600"


# -- config errors: one line, exit 3 for snapshot and 2 elsewhere, never node trouble --------


@pytest.mark.parametrize(
    "text, words",
    [
        ("[ssh]\nconnect_timeout = -5\n", "[ssh] connect_timeout = -5: expected a number from 0.1 to 600 s"),
        ("[ssh]\nknown_hosts = 5\n", "[ssh] known_hosts = 5: expected a string"),
        ("intervall = 5\n", "unknown key 'intervall' (did you mean 'interval'?)"),
        ('read_only = "false"\n', 'read_only = "false": expected true or false'),
        ('[ssh]\nconnect_timeout = "soon"\n', '[ssh] connect_timeout = "soon": expected a number'),
    ],
)
def test_a_config_mistake_stops_every_command_before_any_node_is_touched(text, words, tmp_path, capsys):
    """Once shown as node trouble ("check the network path", "is python3 installed?") or a
    traceback with exit 1: now one line, UNKNOWN for snapshot, 2 for the rest."""
    from dltui import cli

    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    for args, code in ((["snapshot", "gpu01"], 3), (["watch", "gpu01"], 2), (["export", "gpu01"], 2),
                       (["unit", "status", "a.service", "gpu01"], 2), (["burn-in", "gpu01"], 3)):
        assert cli.main([*args, "--config", str(bad)]) == code
        err = capsys.readouterr().err
        assert err.startswith(f"dltui: {bad}: {words}") and err.count("\n") == 1, (args, err)


def test_a_config_folder_that_cannot_be_listed_is_one_line(tmp_path):
    """As root only a dropped CAP_DAC_OVERRIDE makes a folder unreadable: the real kernel
    check, on the real process."""
    folder = tmp_path / "locked" / "dltui"
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text("interval = 1\n")
    os.chown(folder.parent, 65534, 65534)
    os.chmod(folder.parent, 0o700)
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(folder.parent), XDG_STATE_HOME=str(tmp_path / "s"))
    env.pop("DLTUI_CONFIG", None)
    if os.geteuid() == 0:
        argv = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", sys.executable, "-m", "dltui"]
    else:  # an ordinary user cannot enter a folder of nobody's 0700 anyway
        argv = [sys.executable, "-m", "dltui"]
    done = subprocess.run([*argv, "snapshot", "--seconds", "0.2"], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=60)
    assert done.returncode == 3
    assert done.stderr == f"dltui: {folder / 'config.toml'}: cannot read: Permission denied\n"
