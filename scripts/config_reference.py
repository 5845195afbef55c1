#!/usr/bin/env python3
"""Write the table of config keys in docs/configuration.md from their declarations
(dltui/config.py), between the markers ``<!-- config-keys -->`` and ``<!-- /config-keys -->``;
tests/unit/test_readme.py checks that the page holds exactly this.

    python scripts/config_reference.py           # rewrite the table in docs/configuration.md
    python scripts/config_reference.py --check   # exit 1 when it is out of date
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dltui import config  # noqa: E402
from dltui.config_schema import default_words, keys, range_words, type_words  # noqa: E402

PAGE = REPO / "docs" / "configuration.md"
START, END = "<!-- config-keys -->", "<!-- /config-keys -->"
# The top level, every section it declares (a new [table] in config.py shows up here by itself),
# the groups' table and the theme files.
TABLES = (
    ("top level", config.Config),
    *((f"[{k.name}]", k.kind) for k in keys(config.Config) if dataclasses.is_dataclass(k.kind)),
    ("[groups.NAME]", config.GroupSection),
    ("theme files (themes/NAME.toml)", config.ThemeFile),
)


def table() -> str:
    rows = ["| Table | Key | Type | Default | Range | Meaning |", "|---|---|---|---|---|---|"]
    for title, cls in TABLES:
        for k in keys(cls):
            if dataclasses.is_dataclass(k.kind):
                continue  # a section: its own rows follow
            cells = [title, f"`{k.name}`", type_words(k), f"`{default_words(k)}`", range_words(k), k.doc]
            rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)


def updated(text: str) -> str:
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{table()}\n{END}{tail}"


def main() -> int:
    text = PAGE.read_text()
    new = updated(text)
    if "--check" in sys.argv[1:]:
        if new != text:
            print("docs/configuration.md's config table is out of date: python scripts/config_reference.py",
                  file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
