"""``dltui serve --demo`` serves the simulated demo fleet (each tab runs ``dltui demo``), and
``dltui serve demo`` says that it serves an SSH host called demo, and how to get the fleet."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import aiohttp

from .sshd import REPO
from .test_serve_browser_fake_smi import WAIT_S, Screen, _stop


def _start(*args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "dltui", "serve", *args, "--listen", "127.0.0.1:0"],
        cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


async def test_serve_demo_flag_serves_the_simulated_fleet():
    proc, url = _start("--demo")
    base, _, token = url.partition("/#token=")
    screen = Screen()
    try:
        async with aiohttp.ClientSession() as http:
            async with http.ws_connect(
                f"{base.replace('http', 'ws')}/ws?width=160&height=48",
                protocols=("dltui", f"dltui.token.{token.encode().hex()}"),
                origin=base,
            ) as ws:
                async def read() -> None:
                    async for message in ws:
                        if message.type == aiohttp.WSMsgType.BINARY:
                            screen.received(message.data)

                reader = asyncio.ensure_future(read())
                try:
                    await screen.wait_for("gpu01 ● ok", "gpu12 ")  # the demo's 12 nodes
                finally:
                    reader.cancel()
    finally:
        _stop(proc)
    assert proc.returncode == 0


def test_serve_demo_as_a_host_says_it_is_a_host_and_how_to_get_the_demo_fleet():
    proc, url = _start("demo")
    assert proc.stderr is not None
    try:
        said = proc.stderr.readline()
    finally:
        _stop(proc)
    assert url.startswith("http://127.0.0.1:")
    assert said.strip() == "dltui: serving the SSH host 'demo'; the simulated fleet is: dltui serve --demo"


def test_serve_demo_flag_with_nodes_is_one_line_and_exit_2():
    done = subprocess.run(
        [sys.executable, "-m", "dltui", "serve", "--demo", "gpu01"], cwd=REPO, capture_output=True,
        text=True, timeout=WAIT_S,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "dltui: serve --demo serves the simulated fleet, not nodes: drop gpu01 or --demo\n"
