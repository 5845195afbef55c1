"""Settings: command line > environment (DLTUI_*) > config file > defaults.

The file is TOML at ``$XDG_CONFIG_HOME/dltui/config.toml`` (``~/.config/dltui/config.toml``)::

    interval = 1.0
    theme = "dltui-dark"
    read_only = false
    bell = false                 # terminal bell when a critical alert opens

    [ssh]
    known_hosts = "~/.ssh/known_hosts"
    accept_new_host_keys = false
    keepalive_interval = 15
    keepalive_count = 3

    [rules.gpu_temp_high]        # any rule's thresholds, see the README
    warning = 83

    [burnin]                     # burn-in verdict thresholds, see dltui/burnin/verdict.py
    temperature_max_c = 85

    [probe]
    sysfs = "/sys"               # where the nodes' sysfs is mounted (a probe in a container:
                                 # the host's /sys at /host/sys, as node_exporter --path.sysfs)

    [groups.training]            # per node group overrides
    hosts = ["gpu0*"]
    [groups.training.rules.gpu_temp_high]
    warning = 80
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 (Ubuntu 22.04): the tomli backport, same API
    import tomli as tomllib

TomlError = tomllib.TOMLDecodeError


def parse_toml(text: str) -> dict[str, Any]:
    """TOML text -> dict; raises TomlError. The one place the operator side parses TOML."""
    return tomllib.loads(text)


class ConfigError(Exception):
    """A config file that cannot be used; the message names the file and the problem."""


@dataclass
class Config:
    interval_s: float = 1.0
    theme: str = "dltui-dark"
    read_only: bool = False
    bell: bool = False  # ring the terminal bell when a critical alert opens
    ssh: dict[str, Any] = field(default_factory=dict)
    rules: dict[str, dict[str, Any]] = field(default_factory=dict)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    actions: dict[str, Any] = field(default_factory=dict)  # [actions], see dltui/actions/policy.py
    burnin: dict[str, Any] = field(default_factory=dict)  # [burnin]: verdict thresholds
    probe: dict[str, Any] = field(default_factory=dict)  # [probe]: where the probe reads (sysfs)
    source: str | None = None  # the file read, for messages


def default_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "dltui" / "config.toml"


def load(path: str | None = None) -> Config:
    """Read the config file (a missing default file is fine; a missing named one is not)."""
    explicit = path or os.environ.get("DLTUI_CONFIG")
    file = Path(explicit).expanduser() if explicit else default_path()
    data: dict[str, Any] = {}
    if file.exists():
        try:
            data = parse_toml(file.read_text(encoding="utf-8"))
        except (TomlError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{file}: not valid TOML: {exc}") from None
        except OSError as exc:
            raise ConfigError(f"{file}: cannot read: {exc.strerror}") from None
    elif explicit:
        raise ConfigError(f"{file}: no such config file")
    cfg = Config(source=str(file) if file.exists() else None)
    try:
        cfg.interval_s = float(data.get("interval", cfg.interval_s))
        cfg.theme = str(data.get("theme", cfg.theme))
        cfg.read_only = bool(data.get("read_only", cfg.read_only))
        cfg.bell = bool(data.get("bell", cfg.bell))
        cfg.ssh = dict(data.get("ssh", {}))
        cfg.rules = {k: dict(v) for k, v in data.get("rules", {}).items()}
        cfg.groups = {k: dict(v) for k, v in data.get("groups", {}).items()}
        cfg.actions = dict(data.get("actions", {}))
        cfg.burnin = dict(data.get("burnin", {}))
        cfg.probe = _probe_table(data.get("probe", {}), file)
    except (TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(f"{file}: {exc}") from None
    if cfg.interval_s <= 0:
        raise ConfigError(f"{file}: interval must be positive")
    env_interval = os.environ.get("DLTUI_INTERVAL")
    if env_interval:
        try:
            cfg.interval_s = float(env_interval)
        except ValueError:
            raise ConfigError(f"DLTUI_INTERVAL={env_interval!r} is not a number") from None
        if not cfg.interval_s > 0:
            raise ConfigError(f"DLTUI_INTERVAL={env_interval!r}: the interval must be positive")
    cfg.theme = os.environ.get("DLTUI_THEME", cfg.theme)
    return cfg


PROBE_KEYS = {"sysfs": "/sys"}


def _probe_table(table: Any, file: Path) -> dict[str, Any]:
    """``[probe]`` with its defaults; an unknown key or a relative sysfs path is an error."""
    if not isinstance(table, dict):
        raise ConfigError(f"{file}: [probe] must be a table")
    unknown = set(table) - set(PROBE_KEYS)
    if unknown:
        raise ConfigError(f"{file}: [probe] has unknown keys {sorted(unknown)} (known: {', '.join(PROBE_KEYS)})")
    probe = {**PROBE_KEYS, **table}
    sysfs = probe["sysfs"]
    if not isinstance(sysfs, str) or not sysfs.startswith("/"):
        raise ConfigError(f'{file}: [probe] sysfs must be an absolute path such as "/host/sys", not {sysfs!r}')
    return probe
