"""The README documents every field the JSON report can carry."""

import dataclasses
from pathlib import Path

from dltui.core import models
from dltui.node.schema import RECORD_FIELDS

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_every_sample_field_is_documented():
    missing = [f"{k}.{f}" for k, fields in RECORD_FIELDS.items() for f in fields if f"`{f}`" not in README]
    assert missing == []


def test_every_fact_field_is_documented():
    classes = (models.NodeFacts, models.GpuFacts, models.NicFacts, models.BlockDeviceFacts)
    missing = [f.name for cls in classes for f in dataclasses.fields(cls) if f"`{f.name}`" not in README]
    assert missing == []


def test_quick_start_is_the_two_commands():
    quick = README.split("## Quick start", 1)[1].split("##", 1)[0]
    assert "make run" in quick and "make test" in quick


def test_every_rule_and_its_parameters_are_documented():
    from dltui.core.rules import RULES

    missing = [r.id for r in RULES if f"`{r.id}`" not in README]
    missing += [f"{r.id}.{p}" for r in RULES for p in r.defaults if f"`{p}`" not in README]
    assert missing == []


def test_the_config_table_is_written_from_the_declarations():
    """Every config and theme key is in the README, as dltui/config.py declares it (type,
    default, range, words): python scripts/config_reference.py rewrites the table."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "scripts" / "config_reference.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    import dataclasses

    from dltui import config
    from dltui.config_schema import keys

    sections = [k.kind for k in keys(config.Config) if dataclasses.is_dataclass(k.kind)]
    assert config.ProbeSection in sections  # each [table] of the Config is found, new ones too
    for cls in (config.Config, *sections, config.GroupSection, config.ThemeFile):
        missing = [k.name for k in keys(cls) if f"| `{k.name}` |" not in README]
        assert [name for name in missing if not dataclasses.is_dataclass(getattr(config.Config(), name, None))] == []


def test_the_readme_lists_every_colon_command_the_help_lists():
    """The help's ':' commands come from ui.commands.COMMANDS; the README's key table must
    name each one too (`:burnin` and `:attach` were missing)."""
    from dltui.ui.commands import COMMANDS

    row = next(line for line in README.splitlines() if line.startswith("| `:` |"))
    missing = [usage for usage, _ in COMMANDS.values() if f"`{usage.split(',')[0]}`" not in row]
    assert missing == []
