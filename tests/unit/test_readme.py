"""The documentation — README.md, the front page, and docs/*.md, one topic a page — documents
every field the JSON report can carry, every rule and parameter, every config key and ':'
command, each on its page; the README stays short; every relative link reaches an existing
file and heading; each page opens with a table of contents of its headings."""

import ast
import dataclasses
import re
from pathlib import Path

from dltui.core import models
from dltui.node.schema import RECORD_FIELDS

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = (REPO / "README.md").read_text()
README_MAX_LINES = 300


def page(name: str) -> str:
    return (DOCS / name).read_text()


def test_every_sample_field_is_documented():
    schema = page("json-schema.md")
    missing = [f"{k}.{f}" for k, fields in RECORD_FIELDS.items() for f in fields if f"`{f}`" not in schema]
    assert missing == []


def test_every_fact_field_is_documented():
    schema = page("json-schema.md")
    classes = (models.NodeFacts, models.GpuFacts, models.NicFacts, models.BlockDeviceFacts)
    missing = [f.name for cls in classes for f in dataclasses.fields(cls) if f"`{f.name}`" not in schema]
    assert missing == []


def test_quick_start_is_the_two_commands():
    quick = README.split("## Quick start", 1)[1].split("##", 1)[0]
    assert "make run" in quick and "make test" in quick
    assert "constraints.txt" in quick  # and the paragraph saying what they install


def test_the_readme_is_a_front_page():
    assert len(README.splitlines()) <= README_MAX_LINES


def test_the_readme_links_every_docs_page():
    pages = sorted(p.name for p in DOCS.glob("*.md"))
    assert pages  # the docs are there
    assert [name for name in pages if f"](docs/{name})" not in README] == []


def test_every_rule_and_its_parameters_are_documented():
    from dltui.core.rules import RULES

    rules = page("rules.md")
    missing = [r.id for r in RULES if f"`{r.id}`" not in rules]
    missing += [f"{r.id}.{p}" for r in RULES for p in r.defaults if f"`{p}`" not in rules]
    assert missing == []


def test_the_config_table_is_written_from_the_declarations():
    """Every config and theme key is in docs/configuration.md, as dltui/config.py declares it
    (type, default, range, words): python scripts/config_reference.py rewrites the table."""
    import subprocess
    import sys

    script = REPO / "scripts" / "config_reference.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr

    from dltui import config
    from dltui.config_schema import keys

    configuration = page("configuration.md")
    sections = [k.kind for k in keys(config.Config) if dataclasses.is_dataclass(k.kind)]
    assert config.ProbeSection in sections  # each [table] of the Config is found, new ones too
    for cls in (config.Config, *sections, config.GroupSection, config.ThemeFile):
        missing = [k.name for k in keys(cls) if f"| `{k.name}` |" not in configuration]
        assert [name for name in missing if not dataclasses.is_dataclass(getattr(config.Config(), name, None))] == []


def test_the_docs_list_every_colon_command_the_help_lists():
    """The help's ':' commands come from ui.commands.COMMANDS; the key table of
    docs/dashboard.md must name each one too (`:burnin` and `:attach` were missing)."""
    from dltui.ui.commands import COMMANDS

    row = next(line for line in page("dashboard.md").splitlines() if line.startswith("| `:` |"))
    missing = [usage for usage, _ in COMMANDS.values() if f"`{usage.split(',')[0]}`" not in row]
    assert missing == []


# --- links and tables of contents ---------------------------------------------------------

FENCE = re.compile(r"^```.*?^```[^\n]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6}) +(.+?) *#* *$", re.M)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped (backticks
    too), spaces turned into '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(text: str) -> list[tuple[int, str, str]]:
    """(level, words, anchor) of every heading outside code blocks; a repeated anchor gets
    GitHub's -1, -2 ..."""
    seen: dict[str, int] = {}
    out = []
    for m in HEADING.finditer(FENCE.sub("", text)):
        a = anchor(m.group(2))
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.append((len(m.group(1)), m.group(2), f"{a}-{n}" if n else a))
    return out


def links(text: str) -> list[str]:
    """The targets of the Markdown links and images of ``text``, but those in code."""
    return LINK.findall(CODE_SPAN.sub("", FENCE.sub("", text)))


def broken_links(path: Path, text: str) -> list[str]:
    """Every relative link of ``text`` (the file at ``path``) that reaches no file, or no
    heading of the Markdown file it names."""
    broken = []
    for target in links(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file, _, fragment = target.partition("#")
        where = (path.parent / file).resolve() if file else path
        if not where.exists():
            broken.append(f"{path.name}: {target}: no such file")
        elif fragment and where.suffix == ".md":
            body = where.read_text() if file else text
            if fragment not in {a for _, _, a in headings(body)}:
                broken.append(f"{path.name}: {target}: no such heading")
    return broken


MARKDOWN = [REPO / "README.md", REPO / "SECURITY.md", *sorted(DOCS.glob("*.md"))]


def test_every_relative_link_reaches_a_file_and_a_heading():
    assert [b for path in MARKDOWN for b in broken_links(path, path.read_text())] == []


def test_the_link_check_sees_a_broken_link():
    """A link to a missing file, a missing page, or a missing heading is caught (a check blind
    to them passes anything); code is not a link."""
    text = "\n".join(
        [
            "# Page",
            "## A `real` heading: here",
            "[ok](#a-real-heading-here) [ok](docs/rules.md#every-rule) ![ok](screenshots/fleet.svg)",
            "[bad](#no-such-heading) [bad](docs/no-such-page.md) [bad](docs/rules.md#no-such-rule)",
            "`[not a link](#nowhere)`",
            "```",
            "[not a link](#nowhere-either)",
            "```",
        ]
    )
    assert broken_links(REPO / "README.md", text) == [
        "README.md: #no-such-heading: no such heading",
        "README.md: docs/no-such-page.md: no such file",
        "README.md: docs/rules.md#no-such-rule: no such heading",
    ]


def test_github_anchors():
    assert anchor("`dltui export`: dltui's view as Prometheus") == "dltui-export-dltuis-view-as-prometheus"
    assert anchor("`--prometheus URL`: the fleet from Prometheus") == "--prometheus-url-the-fleet-from-prometheus"
    assert anchor("Grafana: `grafana/dltui-fleet.json`") == "grafana-grafanadltui-fleetjson"
    assert [a for *_, a in headings("## Drives\n### Drives\n")] == ["drives", "drives-1"]


def test_each_docs_page_opens_with_its_table_of_contents():
    """Line 1 the title, then a bullet list linking each ## and ### heading of the page, in
    order (### indented under its ##)."""
    for path in sorted(DOCS.glob("*.md")):
        text = path.read_text()
        lines = text.splitlines()
        assert lines[0].startswith("# "), path.name
        wanted = [f"{'  ' * (level - 2)}- [{words}](#{a})" for level, words, a in headings(text) if level in (2, 3)]
        assert wanted, f"{path.name} has no ## headings"
        assert lines[1] == "" and lines[2 : 2 + len(wanted)] == wanted, path.name
        assert lines[2 + len(wanted)] == "", path.name


def test_the_architecture_page_draws_the_layers_the_boundaries_test_holds():
    """docs/architecture.md's layer table lists, row by row, the packages of LAYERS in
    tests/unit/test_boundaries.py: a package moved or added there must be moved here too."""
    tree = ast.parse((REPO / "tests" / "unit" / "test_boundaries.py").read_text())
    layers = next(
        ast.literal_eval(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "LAYERS"
    )
    rows = [line for line in page("architecture.md").splitlines() if re.match(r"\| \d+ \|", line)]
    drawn = [tuple(re.findall(r"`(dltui[\w.]*)`", row.split(" | ")[1])) for row in rows]
    assert [sorted(layer) for layer in drawn] == [sorted(layer) for layer in layers]
