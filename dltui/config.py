"""Settings: command line > environment (DLTUI_*) > config file > defaults — and the one
place every key is declared.

The file is TOML at ``$XDG_CONFIG_HOME/dltui/config.toml`` (``~/.config/dltui/config.toml``).
Each table below is a frozen dataclass; each field is a key with its type, default, range and
the words docs/configuration.md's table shows (``scripts/config_reference.py`` writes that table, and a
test keeps it true). **To add a key, add one field to its table here**: it is then checked
(unknown, wrong type, out of range: one line naming it), documented and typed for the code
that reads it. Rule ids and their parameters are the rules' own (``core/rules``), checked by
``RuleSettings`` with the same words.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .config_schema import ConfigError, build, key, table
from .node.schema import MAX_INTERVAL_S, MIN_INTERVAL_S

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 (Ubuntu 22.04): the tomli backport, same API
    import tomli as tomllib

__all__ = [
    "Config", "ConfigError", "load", "parse", "parse_toml", "read_toml", "TomlError", "default_path",
]

# What a TOML file dltui reads (the config, a theme) may be, checked while it is read, before
# the parser sees it: a parser meets an endless file, a deep nesting or a huge number with a
# MemoryError, a RecursionError or a ValueError, never with one line.
MAX_TOML_BYTES = 1024 * 1024  # a config of hundreds of groups is tens of KiB
MAX_NESTING = 32  # arrays / inline tables, and the parts of one dotted key; dltui's own need 4
MAX_WORD_CHARS = 128  # a bare key or a number: every int then fits str() and float()


class TomlError(ValueError):
    """TOML text that cannot be used: beyond a limit, or not TOML; the message says where."""


def read_toml(path: Path, shown: str) -> dict[str, Any] | None:
    """A TOML file, read within the limits above -> dict; None when there is no such file (the
    caller says whether that is an error). Raises ``ConfigError`` "SHOWN: ...", one line."""
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_TOML_BYTES + 1)  # /dev/zero, a FIFO that never ends: no more
    except FileNotFoundError:
        return None
    except OSError as exc:  # a folder that cannot be listed, a directory
        raise ConfigError(f"{shown}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_TOML_BYTES:
        raise ConfigError(f"{shown}: more than {MAX_TOML_BYTES >> 20} MiB: not a settings file (one is a few KiB)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{shown}: not a text file (UTF-8)") from None
    try:
        return parse_toml(text)
    except TomlError as exc:
        raise ConfigError(f"{shown}: {exc}") from None


def parse_toml(text: str) -> dict[str, Any]:
    """TOML text -> dict; raises TomlError. The one place the operator side parses TOML."""
    _check_shape(text)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlError(f"not valid TOML: {exc}") from None


# The tokens that matter to the limits: strings and comments are skipped whole (a "[" in
# them nests nothing); a word is a bare key or a value (a number, a date, true).
_TOKEN = re.compile(
    r"""(?P<skip>[ \t\r]+|\#[^\n]*
       |"{3}(?:[^\\]|\\.)*?"{3,5}|'{3}.*?'{3,5}|"(?:[^"\\\n]|\\.)*"|'[^'\n]*')
      |(?P<open>[\[{])|(?P<close>[\]}])|(?P<dot>\.)|(?P<end>[=,\n])
      |(?P<word>[^ \t\r\n\[\]{}=,\#"'.]+)""",
    re.VERBOSE | re.DOTALL,
)


def _check_shape(text: str) -> None:
    """Raise TomlError where ``text`` nests or dots deeper than MAX_NESTING or holds a word
    longer than MAX_WORD_CHARS. A quote that opens no whole string ends the check: the parser
    stops there too, with its own message."""
    depth = parts = 0
    pos = 0
    while (match := _TOKEN.match(text, pos)) is not None:
        kind, pos = match.lastgroup, match.end()
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth = max(0, depth - 1)
        parts = parts + 1 if kind == "dot" else 0 if kind in ("open", "close", "end") else parts
        if depth > MAX_NESTING:
            raise TomlError(f"line {_line(text, pos)}: arrays or tables nested more than {MAX_NESTING} deep")
        if parts >= MAX_NESTING:
            raise TomlError(f"line {_line(text, pos)}: a dotted key of more than {MAX_NESTING} parts")
        if kind == "word" and len(match.group()) > MAX_WORD_CHARS:
            raise TomlError(
                f"line {_line(text, pos)}: a number or bare key of {len(match.group())} characters "
                f"(at most {MAX_WORD_CHARS})"
            )


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


@dataclass(frozen=True)
class SshSection:
    """``[ssh]``: how nodes are reached when the command line does not say."""

    config: str | None = key(None, "SSH config file, like -F (default ~/.ssh/config)")
    identity: tuple[str, ...] = key((), "private key files, like -i")
    known_hosts: str | None = key(
        None, "known_hosts file (default: the SSH config's UserKnownHostsFile, else ~/.ssh/known_hosts)"
    )
    accept_new_host_keys: bool = key(False, "add unknown host keys, like StrictHostKeyChecking=accept-new")
    connect_timeout: float = key(
        10.0, "seconds to connect, unless the SSH config says ConnectTimeout", min=0.1, max=600, unit="s"
    )
    keepalive_interval: float = key(
        15.0, "seconds between keepalives (0: none), unless the SSH config says ServerAliveInterval",
        min=0, max=3600, unit="s",
    )
    keepalive_count: int = key(
        3, "unanswered keepalives before a node counts as lost, unless ServerAliveCountMax", min=1, max=100
    )


@dataclass(frozen=True)
class ActionsSection:
    """``[actions]``: how unit and signal actions run (see dltui/actions/policy.py)."""

    privilege: Literal["sudo", "polkit"] = key(
        "sudo", '"sudo": sudo -n when not root; "polkit": systemctl --no-ask-password'
    )
    timeout_s: float = key(90.0, "a hung systemctl is cut off (on the node too) after this", min=1, max=3600, unit="s")
    settle_s: float = key(
        10.0, "a restarted unit must stay active this long with no NRestarts rise", min=0.1, max=3600, unit="s"
    )
    start_wait_s: float = key(30.0, "how long a restarted unit may take to become active", min=0.1, max=3600, unit="s")
    signal_wait_s: float = key(5.0, "how long a signalled process may take to exit", min=0.1, max=600, unit="s")
    query_timeout_s: float = key(15.0, "reading a unit's state or journal", min=1, max=3600, unit="s")


# The node-wide checks of a burn-in verdict ([burnin] optional may name them).
BURNIN_NODE_CHECKS = (
    "gpu_count", "run", "cpu", "disk", "disk_speed", "net", "kernel", "nccl", "bmc", "smoke", "ib", "nvlink",
    "drives",
)


@dataclass(frozen=True)
class BurninSection:
    """``[burnin]``: the verdict's thresholds (dltui/burnin/verdict.py) and the smoke test."""

    temperature_max_c: float = key(85.0, "core temperature never above", min=0, max=150, unit="°C")
    margin_min_c: float = key(5.0, "thermal margin never at or below", min=0, max=100, unit="°C")
    hbm_headroom_c: float = key(5.0, "HBM at least this far below its max", min=0, max=100, unit="°C")
    hbm_max_c: float = key(95.0, "HBM max when the GPU does not report one", min=0, max=150, unit="°C")
    power_fraction_min: float = key(0.9, "sustained power vs the enforced limit, under gpu_burn", min=0, max=1)
    gflops_spread: float = key(0.05, "per-GPU Gflop/s within this fraction of the node median", min=0, max=1)
    sm_clock_p5_fraction: float = key(0.95, "SM clock 5th percentile vs the GPU's median under load", min=0, max=1)
    pcie_replay_max: int = key(80, "PCIe replays above this fail; 1..max warn", min=0, max=10**9)
    ramp_s: float = key(60.0, "load seconds ignored by the consistency and power checks", min=0, max=86400, unit="s")
    xid_after_stop_s: float = key(
        10.0, "XID 45 allowed this long after the stressor stopped", min=0, max=3600, unit="s"
    )
    line_rate_fraction: float = key(0.9, "iperf3 vs the NIC's speed", min=0, max=1)
    nccl_busbw_expected_gbps: float = key(
        0.0, "all_reduce_perf's expected avg bus bandwidth (0: report only)", min=0, max=100000, unit="GB/s"
    )
    nccl_busbw_fraction: float = key(0.9, "of the expected bus bandwidth", min=0, max=1)
    disk_fraction: float = key(0.9, "fio figures vs the device spec, else the other nodes' median", min=0, max=1)
    disk_seq_read_mbps: float = key(
        0.0, "device spec, sequential read (0: compare with sibling nodes)", min=0, max=10**7, unit="MB/s"
    )
    disk_seq_write_mbps: float = key(
        0.0, "device spec, sequential write (0: not set)", min=0, max=10**7, unit="MB/s"
    )
    disk_randread_iops: float = key(0.0, "device spec, 4k random read IOPS (0: not set)", min=0, max=10**9)
    smoke: str = key("", 'a loader smoke test run with sh -c on each node after the load ("": none)')
    smoke_s: float = key(300.0, "the smoke test runs at most this long", min=1, max=86400, unit="s")
    smoke_ramp_s: float = key(60.0, "the smoke test's first seconds are not judged", min=0, max=86400, unit="s")
    smoke_idle_fraction: float = key(0.05, "a GPU idle this often in the smoke test fails it", min=0, max=1)
    ib_rate_gbps: float = key(
        0.0, "the HCA ports' expected rate (0: not set); a port below it warns", min=0, max=10**5, unit="Gb/s"
    )
    ib_ignore_ports: tuple[str, ...] = key((), "globs of HCA ports or HCAs the burn-in leaves alone (spare ports)")
    optional: tuple[str, ...] = key(
        ("smoke", "bmc", "nccl", "disk_speed", "drives"),
        "node checks whose 'not run' does not hold back a pass ([]: every check must run)",
        choices=BURNIN_NODE_CHECKS,
    )


# The training unit of a node that no group gives units to (the actions' UnitConfig reads it).
DEFAULT_UNITS = ("dl_train.service",)


@dataclass(frozen=True, kw_only=True)
class GroupSection:
    """``[groups.NAME]``: a node group, its units, its checkpoint and its rule overrides."""

    hosts: tuple[str, ...] = key(doc="shell-style patterns of node names (gpu0*, gpu1?)", min=1)
    units: tuple[str, ...] | None = key(
        None,
        f"systemd units of these nodes (default {json.dumps(list(DEFAULT_UNITS))}), checked against systemd's grammar",
    )
    checkpoint: str | None = key(None, "a glob of checkpoint files; the newest mtime feeds checkpoint_stale")
    ib_rate_gbps: float | None = key(
        None, "the HCA ports' rate these nodes are built to: sets the ib_* rules' ib_rate_gbps", min=0, max=10**5,
        unit="Gb/s",
    )
    slurm_node: str | None = key(
        None, "these nodes' Slurm NodeName where it is not their short host name; {host} stands for that name "
        '("{host}-ib")'
    )
    kubernetes_node: str | None = key(
        None, "these nodes' Kubernetes node name ({host}: the short host name); set, the SCHED column reads "
        "it with this machine's kubectl and cordon / uncordon act on it"
    )
    containers: tuple[str, ...] | None = key(
        None, "the training containers of these nodes: names, or label selectors (label=KEY=VALUE)"
    )
    rules: dict[str, dict[str, Any]] = key({}, "[groups.NAME.rules.RULE]: rule parameters for these nodes")


@dataclass(frozen=True)
class ProbeSection:
    """``[probe]``: where the probe reads on the nodes (and on this machine)."""

    sysfs: str = key(
        "/sys", "where the nodes' sysfs is mounted, an absolute path (a probe in a container: the host's at "
        "/host/sys, as node_exporter's --path.sysfs)"
    )


@dataclass(frozen=True)
class PrometheusSection:
    """``[prometheus]``: the Prometheus that keeps the fleet's past (node_exporter, dcgm-exporter,
    dltui export): the charts' 6 h / 24 h / 7 d windows and ``snapshot --since`` read it."""

    url: str | None = key(None, "Prometheus's address, e.g. http://prometheus:9090 (--history-from overrides it)")


@dataclass(frozen=True)
class Config:
    """The config file's top level."""

    interval_s: float = key(
        1.0, "seconds between samples", min=MIN_INTERVAL_S, max=MAX_INTERVAL_S, name="interval", unit="s"
    )
    theme: str = key("dltui-dark", "colour theme: dltui-dark, dltui-light, dltui-high-contrast or your own")
    read_only: bool = key(False, "refuse every action that changes a node")
    bell: bool = key(False, "ring the terminal bell when a critical alert opens")
    ssh: SshSection = table(SshSection, "[ssh]")
    actions: ActionsSection = table(ActionsSection, "[actions]")
    burnin: BurninSection = table(BurninSection, "[burnin]")
    probe: ProbeSection = table(ProbeSection, "[probe]")
    prometheus: PrometheusSection = table(PrometheusSection, "[prometheus]")
    rules: dict[str, dict[str, Any]] = key({}, "[rules.RULE]: rule parameters for every node (see Alerts)")
    groups: dict[str, GroupSection] = key({}, "[groups.NAME]: node groups")
    source: str | None = dataclasses.field(default=None, metadata={"internal": True})  # the file read


@dataclass(frozen=True, kw_only=True)
class ThemeFile:
    """A theme file (``themes/NAME.toml``): Textual's theme colours."""

    name: str | None = key(None, "the theme's name (default: the file's name)")
    primary: str = key(doc="main colour, e.g. \"#0178D4\"")
    secondary: str | None = key(None, "colour")
    warning: str | None = key(None, "colour")
    error: str | None = key(None, "colour")
    success: str | None = key(None, "colour")
    accent: str | None = key(None, "colour")
    foreground: str | None = key(None, "colour")
    background: str | None = key(None, "colour")
    surface: str | None = key(None, "colour")
    panel: str | None = key(None, "colour")
    boost: str | None = key(None, "colour")
    dark: bool = key(True, "a dark theme")
    luminosity_spread: float = key(0.15, "how far shades spread", min=0, max=1)
    text_alpha: float = key(0.95, "text opacity", min=0, max=1)
    ansi: bool = key(False, "use the terminal's own ANSI colours")
    variables: dict[str, str] = key({}, "[variables]: Textual CSS variables")


@dataclass(frozen=True)
class CommandLine:
    """The command line's numeric options that are not config keys (``--interval`` is
    ``Config.interval_s``): their ranges make a usage error, never a spinning or hung run."""

    seconds: float = key(3.0, "snapshot: seconds to watch before reporting", min=0.1, max=86400, unit="s")
    lines: int = key(50, "unit logs: journal lines", min=1, max=10000)
    nodes: int = key(12, "demo: simulated nodes", min=1, max=4096)
    gpus: int = key(8, "demo: GPUs per simulated node", min=1, max=64)
    seed: int = key(7, "demo: random seed", min=0, max=2**32 - 1)
    speed: float = key(1.0, "replay: 2 = twice as fast, 0 = all at once", min=0, max=100000)
    net_port: int = key(5201, "burn-in: iperf3 port", min=1, max=65535)
    expected_gpus: int | None = key(None, "burn-in: GPUs each node must have", min=1, max=64)


def default_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "dltui" / "config.toml"


# The packaged theme files: package data beside this module (in an installed wheel too).
PACKAGED_THEMES_DIR = Path(__file__).resolve().parent / "themes"


def theme_dirs() -> list[Path]:
    """The folders of theme files, in the order they load: the packaged ones, then the user's
    own (``~/.config/dltui/themes``, beside the config file). Here rather than in ``ui.themes``
    so that ``--theme``'s completion lists the same names without importing Textual."""
    return [PACKAGED_THEMES_DIR, default_path().parent / "themes"]


def parse(data: dict[str, Any], source: str | None = None) -> Config:
    """A parsed TOML document -> the checked ``Config``; raises ConfigError naming the key."""
    cfg = build(Config, data, f"{source or 'config'}:")
    if not cfg.probe.sysfs.startswith("/"):
        raise ConfigError(
            f'{source or "config"}: [probe] sysfs must be an absolute path such as "/host/sys", not {cfg.probe.sysfs!r}'
        )
    return dataclasses.replace(cfg, source=source)


def load(path: str | None = None) -> Config:
    """Read the config file (a missing default file is fine; a missing named one is not),
    then the environment (``DLTUI_INTERVAL``, ``DLTUI_THEME``)."""
    explicit = path or os.environ.get("DLTUI_CONFIG")
    file = Path(explicit).expanduser() if explicit else default_path()
    data = read_toml(file, str(file))
    if data is None and explicit:
        raise ConfigError(f"{file}: no such config file")
    cfg = parse(data or {}, str(file) if data is not None else None)
    env_interval = os.environ.get("DLTUI_INTERVAL")
    if env_interval:
        cfg = dataclasses.replace(cfg, interval_s=_env_interval(env_interval))
    theme = os.environ.get("DLTUI_THEME")
    return dataclasses.replace(cfg, theme=theme) if theme else cfg


def _env_interval(text: str) -> float:
    from .config_schema import keys

    (k,) = (k for k in keys(Config) if k.attr == "interval_s")
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and k.min <= value <= k.max):  # type: ignore[operator]
        raise ConfigError(f"DLTUI_INTERVAL={text!r}: expected a number from {k.min:g} to {k.max:g} seconds")
    return value
