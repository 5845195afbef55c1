"""Theme files: the three packaged ones load, a broken one is explained, and an installed dltui
(not an editable one) still finds them."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dltui.ui.themes import PACKAGED_DIR, ThemeError, load_theme, load_themes

REPO = Path(__file__).resolve().parents[2]


def test_the_packaged_themes_load_with_their_palettes():
    themes, problems = load_themes([PACKAGED_DIR])
    assert problems == []
    by_name = {t.name: t for t in themes}
    assert sorted(by_name) == ["dltui-dark", "dltui-high-contrast", "dltui-light"]
    assert by_name["dltui-dark"].dark and not by_name["dltui-light"].dark
    contrast = by_name["dltui-high-contrast"]
    assert (contrast.background, contrast.foreground) == ("#000000", "#ffffff")
    assert (contrast.success, contrast.warning, contrast.error) == ("#56b4e9", "#f0e442", "#d55e00")  # Okabe-Ito


def test_the_top_level_themes_folder_is_the_packaged_one():
    assert sorted(p.name for p in (REPO / "themes").glob("*.toml")) == sorted(
        p.name for p in PACKAGED_DIR.glob("*.toml")
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ('name = "x"\nprimary = "#0000"\nbackground = "blue-ish"\n', "x.toml: failed to parse"),
        ('name = "x"\nprimary = \n', "x.toml: not valid TOML"),
        ('name = "x"\nsecondary = "#ffffff"\n', "x.toml: primary is missing: a string"),
        ('name = "x"\nprimary = "#ffffff"\nshade = 3\n', "x.toml: unknown key 'shade'"),
        ('name = "x"\nprimry = "#ffffff"\n', r"x.toml: unknown key 'primry' \(did you mean 'primary'\?\)"),
        ("primary = 5\n", "x.toml: primary = 5: expected a string"),
        ('primary = "#ffffff"\ndark = "yes"\n', 'x.toml: dark = "yes": expected true or false'),
    ],
)
def test_a_broken_theme_file_is_explained(tmp_path, text, message):
    path = tmp_path / "x.toml"
    path.write_text(text)
    with pytest.raises(ThemeError, match=message):
        load_theme(path)


@pytest.mark.oldest_python_only  # what the wheel carries
def test_an_installed_dltui_finds_its_themes(tmp_path):
    source, target = tmp_path / "src", tmp_path / "site"
    shutil.copytree(REPO / "dltui", source / "dltui", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    subprocess.run(  # a real, non-editable install: pip builds a wheel from a copy of the tree
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(source)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    code = (
        "from dltui.ui.themes import PACKAGED_DIR; print(PACKAGED_DIR);"
        " print(sorted(p.name for p in PACKAGED_DIR.glob('*.toml')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": ""},
    ).stdout.splitlines()
    assert out[0].startswith(str(target))
    assert out[1] == "['dltui-dark.toml', 'dltui-high-contrast.toml', 'dltui-light.toml']"
