"""Colour themes from TOML files: the packaged ones (``themes/``), then the user's own.

A theme file names Textual's theme colours (``primary``, ``background``, ``error``, …) and
optionally ``[variables]``. A file that cannot be used is reported in plain words and skipped;
the app then falls back to ``dltui-dark``.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from textual.color import ColorParseError
from textual.theme import Theme

from dltui.config import TomlError, default_path, parse_toml

DEFAULT_THEME = "dltui-dark"
PACKAGED_DIR = Path(__file__).resolve().parents[1] / "themes"
_FIELDS = {f.name for f in fields(Theme)}


class ThemeError(Exception):
    """A theme file that cannot be used; the message names the file and the problem."""


def user_dir() -> Path:
    """``~/.config/dltui/themes``: a user's theme files, loaded after the packaged ones."""
    return default_path().parent / "themes"


def load_theme(path: Path) -> Theme:
    try:
        data = parse_toml(path.read_text(encoding="utf-8"))
    except (TomlError, UnicodeDecodeError) as exc:
        raise ThemeError(f"{path.name}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ThemeError(f"{path.name}: cannot read: {exc.strerror}") from None
    data.setdefault("name", path.stem)
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise ThemeError(f"{path.name}: unknown keys {', '.join(unknown)}")
    if "primary" not in data:
        raise ThemeError(f"{path.name}: 'primary' colour missing")
    try:
        theme = Theme(**data)
        theme.to_color_system().generate()  # parses every colour now, not at the first redraw
    except (ColorParseError, TypeError, ValueError) as exc:
        raise ThemeError(f"{path.name}: {exc}") from None
    return theme


def load_themes(dirs: list[Path]) -> tuple[list[Theme], list[str]]:
    """Every ``*.toml`` in ``dirs`` (missing folders are fine), and the problems met."""
    themes: list[Theme] = []
    problems: list[str] = []
    for folder in dirs:
        for path in sorted(folder.glob("*.toml")) if folder.is_dir() else ():
            try:
                themes.append(load_theme(path))
            except ThemeError as exc:
                problems.append(str(exc))
    return themes, problems
