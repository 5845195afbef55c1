"""The probe runs as a standalone program on a bare python3: no site-packages, no dltui."""

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dltui.core.state import FleetState
from dltui.node import bundle
from dltui.transport.protocol import ProbeReader

# The node's interpreter: the system one where present (what sshd would run), else ours.
PYTHON3 = shutil.which("python3", path="/usr/bin:/bin") or sys.executable


def run_lines(cmd, **kw):
    out = subprocess.run(cmd, capture_output=True, timeout=60, check=True, **kw)
    return [json.loads(line) for line in out.stdout.decode().splitlines() if line.strip()], out


def test_standalone_copy_outside_the_package_runs_with_isolated_python(tmp_path):
    script = tmp_path / "elsewhere" / "dltui-probe.py"
    script.parent.mkdir()
    script.write_text(bundle.standalone_script())
    lines, _ = run_lines([PYTHON3, "-I", "-S", str(script), "--count", "2", "--interval", "0.2"], cwd=tmp_path)
    assert [line["type"] for line in lines[:3]] == ["hello", "sample", "sample"]
    fleet = FleetState(["n"])
    reader = ProbeReader("n", fleet)
    for line in lines:
        reader.feed(json.dumps(line))
    node = fleet.nodes["n"]
    meminfo = Path("/proc/meminfo").read_text().split("\n")[0].split()
    assert node.facts.memory_total_bytes == int(meminfo[1]) * 1024
    assert node.facts.hostname == os.uname().nodename
    assert node.facts.gpu_source is None and node.facts.gpu_note == "no NVIDIA driver found"
    assert node.sample.gpus == []
    assert node.sample.cpu.total_percent is not None  # second sample has rates
    assert reader.malformed == 0


def test_ssh_form_reads_sources_from_stdin_and_exits_when_stdin_closes():
    cmd = bundle.ssh_command(interval_s=0.2, watchdog_s=30, python=PYTHON3)
    proc = subprocess.Popen(["sh", "-c", cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdin.write(bundle.payload())
    proc.stdin.flush()
    first = json.loads(proc.stdout.readline())
    second = json.loads(proc.stdout.readline())
    assert first["type"] == "hello" and second["type"] == "sample"
    proc.stdin.close()  # the operator went away
    assert proc.wait(timeout=10) == 0
    proc.stdout.close()
    proc.stderr.close()


def test_ssh_form_exits_when_the_operator_stops_pinging():
    cmd = bundle.ssh_command(interval_s=0.1, watchdog_s=0.5, python=PYTHON3)
    proc = subprocess.Popen(["sh", "-c", cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdin.write(bundle.payload())
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["type"] == "hello"
    # stdin stays open but silent: the watchdog must end the probe on its own
    assert proc.wait(timeout=20) == 0
    proc.stdin.close()
    proc.stdout.close()
    proc.stderr.close()


@pytest.mark.parametrize("name", sorted(n for n in bundle.sources() if n != "pynvml"))
def test_every_shipped_module_is_python_3_8_syntax(name):
    ast.parse(bundle.sources()[name], feature_version=(3, 8))


def test_shipped_modules_import_nothing_outside_the_standard_library():
    stdlib = set(sys.stdlib_module_names)
    for name, src in bundle.sources().items():
        if name == "pynvml" or name.split(".")[0] == "amdsmi":  # the shipped bindings: ctypes, stdlib
            continue
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Import):
                roots = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = [node.module.split(".")[0]]
            else:
                continue
            for root in roots:
                assert root in stdlib or root in ("pynvml", "amdsmi"), f"{name} imports {root}"


def test_payload_is_small_enough_to_send_on_every_connect():
    assert len(bundle.payload()) < 200_000


def test_the_shipped_binding_knows_its_version_without_package_metadata():
    from importlib.metadata import version

    assert bundle.sources()["dltui.node.probe.binding"] == f"NVML_BINDING_VERSION = {version('nvidia-ml-py')!r}\n"


def _other_pythons():
    """Every python3.8+ this machine can run, found the way an operator's shell would (PATH;
    with pyenv, all of its installed versions made visible to its shims)."""
    env = dict(os.environ)
    if shutil.which("pyenv"):
        listed = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True)
        env["PYENV_VERSION"] = ":".join(listed.stdout.split())
    found = []
    for minor in range(8, 15):
        exe = shutil.which(f"python3.{minor}", path=env.get("PATH"))
        if exe and subprocess.run([exe, "-c", "pass"], env=env, capture_output=True).returncode == 0:
            found.append(pytest.param(exe, env, id=f"python3.{minor}"))
    return found or [pytest.param(PYTHON3, env, id="python3")]


@pytest.mark.parametrize("python, env", _other_pythons())
def test_the_ssh_form_runs_on_every_python3_from_3_8_on(python, env):
    cmd = bundle.ssh_command(interval_s=0.2, watchdog_s=30, python=python)
    proc = subprocess.Popen(["sh", "-c", cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdin.write(bundle.payload())
    proc.stdin.flush()
    hello, sample = json.loads(proc.stdout.readline()), json.loads(proc.stdout.readline())
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0, proc.stderr.read().decode()[-500:]
    proc.stdout.close()
    proc.stderr.close()
    version = python.rsplit("python", 1)[1]
    assert hello["type"] == "hello" and hello["facts"]["python"].startswith(version + "." if version != "3" else "3.")
    assert sample["type"] == "sample" and sample["r"]["memory"]


def test_the_probe_reads_interval_commands_between_pings_even_split_across_reads():
    """stdin carries pings (bare newlines) and ``interval S`` lines, possibly cut anywhere by
    the pipe; a value out of range or not a number is ignored."""
    import threading

    from dltui.node.probe.main import StdinWatchdog

    dog = StdinWatchdog.__new__(StdinWatchdog)  # no reader thread: fed by hand
    dog.stop, dog.interval, dog._partial = threading.Event(), None, b""
    dog._commands(b"\n\ninterv")
    assert dog.interval is None
    dog._commands(b"al 2.5\n\n")
    assert dog.interval == 2.5
    for bad in (b"interval 0\n", b"interval nan-ish\n", b"interval 99999\n", b"interval\n"):
        dog._commands(bad)
    assert dog.interval == 2.5
