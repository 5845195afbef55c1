"""fio's figures across a run's nodes (burn-in notes §4 item 9): against the drive's spec
when ``[burnin]`` gives one, else against the median of the run's other nodes, never a median
of one, and never for a ``--disk`` on storage the nodes share. Pure, like the verdict."""

from __future__ import annotations

import statistics

from dltui.node.burnin import parse
from dltui.node.burnin.filesystem import NETWORK_FS

from .verdict import FAIL, NOT_RUN, PASS, Item, NodeRun, NodeVerdict, Thresholds, settings

_FIO_FIGURES = (  # (job, field, label, unit scale, unit); the spec settings: compare_disks
    ("seqread", "read_bytes_per_s", "sequential read", 1e6, "MB/s"),
    ("seqwrite", "write_bytes_per_s", "sequential write", 1e6, "MB/s"),
    ("randread", "read_iops", "4k random read", 1.0, "IOPS"),
)


def _fio_figures(run: NodeRun) -> dict[str, float]:
    """The node's clean fio figures (job -> value), empty when fio did not run clean."""
    if not (run.result.get("disk") or {}).get("tool"):
        return {}
    res = parse.parse_fio(run.outputs.get("fio.json", ""))
    if res["error"]:
        return {}
    jobs = {j["name"]: j for j in res["jobs"]}
    out = {}
    for job, name, *_ in _FIO_FIGURES:
        value = (jobs.get(job) or {}).get(name)
        if value:
            out[job] = float(value)
    return out


def compare_disks(runs: list[NodeRun], verdicts: list[NodeVerdict], thresholds: Thresholds) -> None:
    """fio's figures against the device spec when ``[burnin]`` gives one, else against the
    median of at least two other nodes of the run (item 9; "the median" of one other node is
    that node, and one slow twin fails the other); one "disk_speed" item per node that ran
    fio. A ``--disk`` on a network file system, or on one several nodes of the run share,
    measures that storage system: said so, never compared between nodes nor with a drive."""
    cfg = settings(thresholds)
    figures = [_fio_figures(r) for r in runs]
    shared = _shared_storage(runs)
    given = {"seqread": cfg.disk_seq_read_mbps, "seqwrite": cfg.disk_seq_write_mbps, "randread": cfg.disk_randread_iops}
    spec = {job: value for job, value in given.items() if value}
    frac = cfg.disk_fraction
    for n, vd in enumerate(verdicts):
        mine = figures[n]
        if not mine:
            continue
        if n in shared:
            vd.items.append(Item(
                "disk_speed", NOT_RUN,
                f"measured {shared[n]}, not this node's drive: not compared between nodes "
                f"({_said(mine)})",
                "to judge the node's drive, give --disk a folder on its own local file system"))
            continue
        if spec:
            ref, against = spec, "the device spec"
            ref = {j: v * (1e6 if j != "randread" else 1.0) for j, v in spec.items()}
        else:
            others = [f for k, f in enumerate(figures) if k != n and f and k not in shared]
            if len(others) < 2:
                vd.items.append(Item(
                    "disk_speed", NOT_RUN,
                    f"could not compare: {len(others) or 'no'} other node{'' if len(others) == 1 else 's'} "
                    "of the run measured its own drive (a median needs two or more) and no device "
                    "spec is set ([burnin] disk_seq_read_mbps, disk_seq_write_mbps, "
                    f"disk_randread_iops); {_said(mine)}",
                    "set the drive's spec in [burnin], or burn in three or more sibling nodes together"))
                continue
            ref = {job: statistics.median(f[job] for f in others if job in f)
                   for job, *_ in _FIO_FIGURES if any(job in f for f in others)}
            against = f"the median of {len(others)} other nodes"
        slow, said = [], []
        for job, _, label, scale, unit in _FIO_FIGURES:
            if job not in mine or job not in ref:
                continue
            said.append(f"{label} {mine[job] / scale:,.0f} {unit} (vs {ref[job] / scale:,.0f})")
            if mine[job] < frac * ref[job]:
                slow.append(said[-1])
        if slow:
            vd.items.append(Item(
                "disk_speed", FAIL, f"below {frac:.0%} of {against}: " + "; ".join(slow),
                "check the drive (SMART, firmware, its PCIe link), the file system and mount"))
        else:
            vd.items.append(Item("disk_speed", PASS, f"within {frac:.0%} of {against}: "
                                 + "; ".join(said)))


def _said(figures: dict[str, float]) -> str:
    return "; ".join(f"{label} {figures[job] / scale:,.0f} {unit}"
                     for job, _, label, scale, unit in _FIO_FIGURES if job in figures)


def _shared_storage(runs: list[NodeRun]) -> dict[int, str]:
    """Per run index whose fio scratch is not the node's own drive, what it is in words: a
    network file system, or one file system (same identity) on several nodes of the run."""
    fss = [(r.result.get("disk") or {}).get("fs") or {} for r in runs]
    by_id: dict[str, list[str]] = {}
    for run, fs in zip(runs, fss, strict=True):
        if fs.get("id"):
            by_id.setdefault(fs["id"], []).append(run.node)
    out = {}
    for n, fs in enumerate(fss):
        where = f"{fs.get('type')} {fs.get('source')}"
        if fs.get("type") in NETWORK_FS:
            out[n] = f"the network storage {where}"
        elif len(by_id.get(fs.get("id") or "", ())) >= 2:
            out[n] = f"a file system {_and(by_id[fs['id']])} share ({where})"
    return out


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
