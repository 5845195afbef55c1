"""A hands-on lab: real OpenSSH servers on loopback — a jump host and GPU nodes behind it —
and a client home whose ~/.ssh/config reaches them with ProxyJump, as an operator's would.

    sudo python scripts/sshd_lab.py /tmp/lab            # jump, gpu01, gpu02, gpu03 (hot)
    HOME=/tmp/lab/home dltui gpu01 gpu02 gpu03          # in another terminal
    sudo python scripts/sshd_lab.py /tmp/lab --slurm    # and a real Slurm every node sees

With ``--slurm`` a real slurmctld + slurmd + munge (tests/integration/slurm_lab.py) run beside
them, every node's sessions see it (SLURM_CONF), and the lab prints how to submit a job as
another user: the SCHED column, drain / resume and the JOBS column then speak of real jobs.

The nodes' GPUs are FAKE: a test-only nvidia-smi on their PATH replays a real 8x H100
capture; gpu03 reports GPU 0 hot and throttled. Ctrl-C stops every server.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.slurm_lab import SlurmLab, apps_with_pids  # noqa: E402
from tests.integration.sshd import SshLab  # noqa: E402

HOT = {
    "temperature.gpu": "91",
    "clocks_event_reasons.active": "0x0000000000000088",
    "clocks_event_reasons.hw_slowdown": "Active",
    "clocks_event_reasons.hw_power_brake_slowdown": "Active",
    "clocks.current.sm": "705",
}


def main(base: Path, slurm: bool = False) -> None:
    base.mkdir(parents=True, exist_ok=False)
    scheduler = SlurmLab().start() if slurm else None
    lab = SshLab(base)
    apps = base / "gpu01-apps.csv"
    if scheduler is not None:  # a real job of another user, on gpu01's (fake) GPU 0
        job = scheduler.submit("sleep 100000", "--job-name=llama-ft", "--time=03:30:00")
        scheduler.wait_job(job)
        apps.write_text(apps_with_pids(scheduler.job_pids(job)[-1:]))
    lab.add_node("jump", jump=True, fake_smi=False)
    for name in ("gpu01", "gpu02", "gpu03"):
        node = lab.add_node(name)
        node.env["FAKE_SMI_GPU_COUNT"] = "8"
        # every lab node is this machine: as root they would share /var/lib/dltui/burnin, and a
        # second node's burn-in would be refused as "already running"
        node.env["DLTUI_BURNIN_DIR"] = str(node.dir / "burnin")
        if scheduler is not None:
            node.env.update(scheduler.env)
            if name == "gpu01":
                node.env["FAKE_SMI_APPS"] = str(apps)
    scenario = base / "hot.jsonl"
    scenario.write_text(json.dumps({"gpus": {"0": HOT}}) + "\n")
    lab.nodes["gpu03"].env["FAKE_SMI_SCENARIO"] = str(scenario)
    lab.start()
    home = lab.make_home(base / "home")
    for node in lab.nodes.values():
        print(f"{node.name}: 127.0.0.1:{node.port} (pid {node.proc.pid})")
    if scheduler is not None:
        conf = scheduler.env["SLURM_CONF"]
        print(f"\nSlurm node {scheduler.node_name} (SLURM_CONF={conf}): job {job} llama-ft of nobody on "
              f"gpu01's GPU 0 ({apps})")
    print(f"\nHOME={home} dltui gpu01 gpu02 gpu03\nCtrl-C to stop.", flush=True)
    stop = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}  # Ctrl-C, kill, or the terminal closed
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)  # sigwait needs them blocked
    try:
        signal.sigwait(stop)
    finally:
        lab.close()
        if scheduler is not None:
            scheduler.close()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--slurm"]
    main(Path(args[0] if args else "/tmp/dltui-lab").resolve(), slurm="--slurm" in sys.argv[1:])
