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
