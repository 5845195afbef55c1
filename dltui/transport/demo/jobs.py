"""Whose work the demo fleet's GPUs hold: a Slurm job per node (user, name, time left), and on
some nodes a Docker container instead, so the screens show their USER, JOB / CONTAINER and
JOBS columns. Chosen from the node's index alone (no random draw: the samples' numbers stay
what they were), and answered as ``scontrol show job -o`` and ``docker inspect`` would."""

from __future__ import annotations

import json
from typing import Any

from .scenarios import EPOCH

USERS = ("alice", "bob", "carol", "dave", "erin")
UIDS = (1001, 1002, 1003, 1004, 1005)
JOB_NAMES = ("llama-ft", "sdxl-train", "bert-pre", "rlhf-ppo", "vit-l16")
FIRST_JOB = 48213
CONTAINER_EVERY = 5  # every fifth node trains in a container, outside Slurm
CONTAINER_NAME = "trainer"
JOB_LIMIT_S = 48 * 3600.0
JOB_ELAPSED_S = 9 * 3600.0 + 840.0  # how far into its time limit the first node's job is


def holder(index: int) -> dict[str, Any]:
    """The process fields the probe would read for node ``index``'s training processes."""
    who = index % len(USERS)
    if index % CONTAINER_EVERY == CONTAINER_EVERY - 1:
        return {
            "uid": UIDS[who],
            "user": USERS[who],
            "container_id": container_id(index),
            "container_runtime": "docker",
        }
    return {"uid": UIDS[who], "user": USERS[who], "slurm_job": FIRST_JOB + 7 * index, "slurm_step": "0"}


def container_id(index: int) -> str:
    return (f"{index:04x}" + "9f3c2e7a1b5d4c8e") * 4


def answer(index: int, argv: list[str], now: float) -> tuple[str, int] | None:
    """(output, exit status) of a job or container lookup on node ``index``; None for others."""
    tool = argv[0].rsplit("/", 1)[-1] if argv else ""
    fields = holder(index)
    if tool == "scontrol" and argv[1:3] == ["show", "job"]:
        job = FIRST_JOB + 7 * index
        if argv[-1] != str(job) or "slurm_job" not in fields:
            return "slurm_load_jobs error: Invalid job id specified\n", 1
        # hours into its run, whatever the clock (a live demo runs on today's): a job on every
        # node with time left, the hour's minutes moving on
        elapsed = JOB_ELAPSED_S + 3600.0 * (index % 7) + (now - EPOCH) % 3600.0
        return (
            f"JobId={job} JobName={JOB_NAMES[index % len(JOB_NAMES)]} UserId={fields['user']}({fields['uid']}) "
            f"GroupId=ml(2000) JobState=RUNNING Reason=None RunTime={_hms(elapsed)} "
            f"TimeLimit={_hms(JOB_LIMIT_S)} Partition=gpu NodeList=demo AllocTRES=cpu=96,mem=1000G,node=1,"
            "billing=96,gres/gpu=8\n",
            0,
        )
    if tool == "docker" and argv[1:2] == ["inspect"]:
        if "container_id" not in fields or argv[-1] != fields["container_id"]:
            return "[]\nError: No such object: " + argv[-1] + "\n", 1
        return json.dumps([{
            "Id": fields["container_id"],
            "Name": "/" + CONTAINER_NAME,
            "RestartCount": 0,
            "State": {"Status": "running", "OOMKilled": False, "StartedAt": "2026-01-01T00:46:00.000000000Z",
                      "Health": {"Status": "healthy"}},
            "Config": {"Image": "nvcr.io/nvidia/pytorch:25.01-py3"},
            "HostConfig": {"RestartPolicy": {"Name": "unless-stopped", "MaximumRetryCount": 0}},
        }]) + "\n", 0
    return None


def _hms(seconds: float) -> str:
    s = max(0, int(seconds))
    days, rest = divmod(s, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text
