"""The burn-in's node-wide checks: CPU and memory stress, the disk and the network, the kernel's
log (machine checks, PCIe AER), nccl-tests, the BMC's event log and the loader smoke test; and
across the run's nodes, each one's disk against the others'."""

from __future__ import annotations

import re

from dltui.config import BurninSection
from dltui.node.burnin import parse

from .drive_check import judge as drives
from .items import FAIL, NOT_RUN, PASS, Item, NodeRun

# --- host ----------------------------------------------------------------------------------


def host_checks(run: NodeRun, cfg: BurninSection) -> list[Item]:
    items: list[Item] = []
    plan, result = run.plan, run.result
    if plan.get("cpu") or plan.get("memory"):
        code = (result.get("cpu") or {}).get("exit_code")
        if (result.get("cpu") or {}).get("tool") is None:
            items.append(
                Item(
                    "cpu",
                    NOT_RUN,
                    (result.get("cpu") or {}).get("reason") or "stress-ng not run",
                    "install stress-ng",
                )
            )
        else:
            v = parse.stress_ng_verdict(code, run.outputs.get("stress-ng.log", ""))
            status = {"pass": PASS, "fail": FAIL}.get(v["verdict"], NOT_RUN)
            items.append(
                Item(
                    "cpu",
                    status,
                    v["reason"],
                    "" if status == PASS else "check EDAC/MCE lines; test the DIMMs",
                )
            )
    if plan.get("disk"):
        disk = result.get("disk") or {}
        if disk.get("tool") is None:
            items.append(Item("disk", NOT_RUN, disk.get("reason") or "fio not run", "install fio"))
        else:
            res = parse.parse_fio(run.outputs.get("fio.json", ""))
            if res["error"]:
                items.append(Item("disk", FAIL, res["error"], "check the drive's SMART log"))
            else:
                j = res["jobs"]
                bw = sum(x["write_bytes_per_s"] or 0 for x in j) + sum(
                    x["read_bytes_per_s"] or 0 for x in j
                )
                items.append(Item("disk", PASS, f"fio clean (verify), {bw / 1e6:.0f} MB/s total"))
    if "kernel" in result:
        items += _kernel(run)
    for key, check in (("nccl", _nccl), ("bmc", _bmc), ("smoke", _smoke), ("drives", drives)):
        if key in result:  # judged by drivers that run them; older runs never had them
            items.append(check(run, cfg))
    if plan.get("net"):
        net = result.get("net") or {}
        if net.get("tool") is None:
            items.append(
                Item("net", NOT_RUN, net.get("reason") or "iperf3 not run", "install iperf3")
            )
        else:
            items.append(_iperf(run, cfg))
    return items


_MACHINE_CHECK = re.compile(r"\bEDAC\b|\bmce:|Machine check|Hardware Error", re.IGNORECASE)
_PCIE_AER = re.compile(r"\bAER\b|PCIe Bus Error")


def _kernel(run: NodeRun) -> list[Item]:
    """New EDAC/MCE lines fail the host; PCIe AER lines fail the PCIe check (kernel.log)."""
    kernel = run.result.get("kernel") or {}
    if kernel.get("tool") is None:
        why = kernel.get("reason") or "the kernel log was not read"
        return [Item("kernel", NOT_RUN, why, "let the account read the journal (group adm)")]
    lines = run.outputs.get("kernel.log", "").splitlines()
    items = []
    mce = [x for x in lines if _MACHINE_CHECK.search(x)]
    aer = [x for x in lines if _PCIE_AER.search(x)]
    if mce:
        items.append(Item("kernel", FAIL, f"{len(mce)} EDAC/MCE lines, first: {mce[0][-160:]}",
                          "find the DIMM or CPU it names (edac-util, mcelog); replace it"))
    if aer:
        items.append(Item("pcie_aer", FAIL, f"{len(aer)} PCIe AER lines, first: {aer[0][-160:]}",
                          "reseat the device at that bus address, or its riser/cable"))
    return items or [Item("kernel", PASS, "no EDAC, MCE or PCIe AER line during the run")]


def _iperf(run: NodeRun, cfg: BurninSection) -> Item:
    rates = []
    for name in ("iperf3.json", "iperf3-R.json"):
        res = parse.parse_iperf3(run.outputs.get(name, ""))
        if res.get("error"):
            return Item("net", FAIL, res["error"], "check the link, the peer and its iperf3 server")
        rates.append(res.get("received_bits_per_s") or 0.0)
    speed = (run.result.get("net") or {}).get("line_rate_mbps")
    text = " / ".join(f"{r / 1e9:.2f}" for r in rates) + " Gbit/s (both directions)"
    if speed and min(rates) < cfg.line_rate_fraction * speed * 1e6:
        return Item(
            "net",
            FAIL,
            f"{text}, line rate {speed / 1000:g} Gbit/s",
            "check the cable/optic, the switch port and the NIC firmware",
        )
    return Item("net", PASS, text + ("" if speed else "; line rate unknown, not compared"))


def _nccl(run: NodeRun, cfg: BurninSection) -> Item:
    """nccl-tests all_reduce_perf on this node's GPUs: data correct, bus bandwidth."""
    nccl = run.result.get("nccl") or {}
    if nccl.get("tool") is None:
        step = "install nccl-tests (all_reduce_perf) on the node" if nccl.get("missing") else ""
        return Item("nccl", NOT_RUN, nccl.get("reason") or "all_reduce_perf not run", step)
    res = parse.parse_nccl(run.outputs.get("nccl.log", ""))
    code = nccl.get("exit_code")
    step = "check NVLink/NVSwitch (nvidia-smi nvlink -s, fabric manager), then the GPUs"
    if res["out_of_bounds"]:
        return Item("nccl", FAIL, f"all_reduce_perf: {res['out_of_bounds']} out-of-bounds "
                    "values (wrong results)", step)
    if res["out_of_bounds"] is None or res["avg_busbw_gbps"] is None:
        why = "timed out" if nccl.get("timed_out") else f"exit {code}"
        said = nccl.get("last_words")
        return Item("nccl", FAIL if code else NOT_RUN, f"all_reduce_perf gave no result ({why})"
                    + (f": {said}" if said else "; see nccl.log"), step)
    avg = res["avg_busbw_gbps"]
    text = f"avg busbw {avg:g} GB/s, 0 out-of-bounds"
    if code:
        return Item("nccl", FAIL, f"all_reduce_perf exit {code} ({text})", step)
    expected = cfg.nccl_busbw_expected_gbps
    if expected and avg < cfg.nccl_busbw_fraction * expected:
        return Item("nccl", FAIL, f"{text} < {cfg.nccl_busbw_fraction:g} x expected "
                    f"{expected:g} GB/s", step)
    return Item("nccl", PASS, text + (f" (expected {expected:g})" if expected else
                                      "; no expected value set, not compared"))


_BMC_POWER = re.compile(r"power supply|power unit|\bpsu|\bps\d|\bfan|\bvoltage|power",
                        re.IGNORECASE)


def _bmc(run: NodeRun, cfg: BurninSection) -> Item:
    """New BMC event-log (SEL) lines about PSUs, fans or power during the run fail it."""
    bmc = run.result.get("bmc") or {}
    if bmc.get("tool") is None:
        return Item("bmc", NOT_RUN, bmc.get("reason") or "the BMC event log was not read",
                    "install ipmitool and let the account run it (root, or sudo -n)")
    new = [x for x in run.outputs.get("bmc_sel.log", "").splitlines() if x.strip()]
    bad = [x for x in new if _BMC_POWER.search(x)]
    if bad:
        shown = "; ".join(x.strip()[-120:] for x in bad[:3])
        return Item("bmc", FAIL, f"{len(bad)} new BMC PSU/fan/power events: {shown}",
                    "check the PSUs, their feeds and the fans the events name")
    other = f"; {len(new)} other new SEL entries" if new else ""
    return Item("bmc", PASS, f"no new BMC PSU/fan/power event{other}")


def _smoke(run: NodeRun, cfg: BurninSection) -> Item:
    """The operator's loader smoke test: a GPU idle (0 %) in >= 5 % of its samples after the
    first minute is the loader_starvation pattern."""
    smoke = run.result.get("smoke") or {}
    if smoke.get("tool") is None:
        return Item("smoke", NOT_RUN, smoke.get("reason") or "no smoke test ran",
                    'set [burnin] smoke = "CMD" (a short loader-heavy training run)')
    code = smoke.get("exit_code")
    if code and not smoke.get("timed_out"):
        said = smoke.get("last_words")
        return Item("smoke", FAIL, f"the smoke command exited {code}"
                    + (f": {said}" if said else "; see smoke.log"),
                    "run it by hand on the node and fix what it says")
    n = int(smoke.get("samples") or 0)
    ramp = f"{float(run.plan.get('smoke_ramp_s', 60.0)):g} s"
    if not n:
        return Item("smoke", NOT_RUN, f"the smoke test ended within its first {ramp}",
                    "give it a command that runs for a few minutes")
    zero = {int(k): int(v) for k, v in (smoke.get("zero") or {}).items()}
    idle = {k: v / n for k, v in zero.items() if v / n >= cfg.smoke_idle_fraction}
    if idle:
        shown = ", ".join(f"GPU {k} {100 * f:.0f} %" for k, f in sorted(idle.items()))
        return Item("smoke", FAIL, f"loader starvation: GPUs idle during the smoke test "
                    f"({shown} of {n} samples after its first {ramp})",
                    "feed the GPUs faster: more loader workers, faster storage or network")
    worst_idle = max(zero.values(), default=0) / n
    return Item("smoke", PASS, f"GPUs busy: at most {100 * worst_idle:.1f} % idle over {n} "
                f"samples after its first {ramp}")
