"""Colour themes from TOML files: the packaged ones (``themes/``), then the user's own.

A theme file names Textual's theme colours (``primary``, ``background``, ``error``, …) and
optionally ``[variables]``. A file that cannot be used is reported in plain words and skipped;
the app then falls back to ``dltui-dark``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from textual.color import ColorParseError
from textual.theme import Theme

from dltui.config import PACKAGED_THEMES_DIR, ConfigError, ThemeFile, read_toml
from dltui.config_schema import build

DEFAULT_THEME = "dltui-dark"
# The packaged folder alone: what the tests, the screenshots and the bench load (the dashboard
# loads config.theme_dirs(), the user's folder too).
PACKAGED_DIR = PACKAGED_THEMES_DIR


class ThemeError(Exception):
    """A theme file that cannot be used; the message names the file and the problem."""


def load_theme(path: Path) -> Theme:
    try:  # read within the config's limits (size, nesting, numbers); every key: config.ThemeFile
        data = read_toml(path, path.name)
        if data is None:  # listed, then gone (or a dangling link)
            raise ThemeError(f"{path.name}: cannot read: no such file")
        declared = build(ThemeFile, data, f"{path.name}:")
    except ConfigError as exc:
        raise ThemeError(str(exc)) from None
    values = {f.name: getattr(declared, f.name) for f in dataclasses.fields(ThemeFile)}
    values["name"] = declared.name or path.stem
    try:
        theme = Theme(**values)
        theme.to_color_system().generate()  # parses every colour now, not at the first redraw
    except (ColorParseError, TypeError, ValueError) as exc:
        raise ThemeError(f"{path.name}: {exc}") from None
    return theme


def load_themes(dirs: list[Path]) -> tuple[list[Theme], list[str]]:
    """Every ``*.toml`` in ``dirs`` (missing folders are fine), and the problems met."""
    themes: list[Theme] = []
    problems: list[str] = []
    for folder in dirs:
        try:
            paths = sorted(folder.glob("*.toml")) if folder.is_dir() else []
        except OSError as exc:  # a folder that cannot be listed: said once, the rest loads
            problems.append(f"{folder}: cannot list: {exc.strerror or exc}")
            continue
        for path in paths:
            try:
                themes.append(load_theme(path))
            except ThemeError as exc:
                problems.append(str(exc))
    return themes, problems
