"""The config file and theme files are read within limits — size, nesting, dotted-key parts,
length of a number — so that no file makes dltui crash: each case is one line naming the file,
exit 2 (3 for snapshot), never a RecursionError, ValueError or MemoryError traceback."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from dltui.config import MAX_TOML_BYTES, ConfigError, load, parse_toml
from dltui.ui.themes import ThemeError, load_theme, load_themes

ROOT = Path(__file__).resolve().parents[2]

DEEP = "a = " + "[" * 500 + "]" * 500 + "\n"
DECIMAL = "interval = " + "1" * 5000 + "\n"
HEX = "interval = 0x" + "f" * 5000 + "\n"

REFUSED = [
    (DEEP, "line 1: arrays or tables nested more than 32 deep"),
    ("a = " + "{b = " * 40 + "1" + "}" * 40 + "\n", "line 1: arrays or tables nested more than 32 deep"),
    ("interval = 2\n" + DECIMAL, "line 2: a number or bare key of 5000 characters (at most 128)"),
    (HEX, "line 1: a number or bare key of 5002 characters (at most 128)"),
    ("interval = 1." + "0" * 5000 + "\n", "line 1: a number or bare key of 5000 characters (at most 128)"),
    ("rules" + ".a" * 1200 + " = 1\n", "line 1: a dotted key of more than 32 parts"),
    ("[groups" + '."g"' * 40 + "]\n", "line 1: a dotted key of more than 32 parts"),
]


@pytest.mark.parametrize("text, words", REFUSED)
def test_a_config_beyond_a_limit_is_one_line_naming_the_file(tmp_path, text, words):
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load(str(path))
    assert str(err.value) == f"{path}: {words}"


def test_an_endless_file_is_read_no_further_than_the_limit():
    with pytest.raises(ConfigError) as err:
        load("/dev/zero")
    assert str(err.value) == "/dev/zero: more than 1 MiB: not a settings file (one is a few KiB)"


def test_the_size_limit_is_exact(tmp_path):
    path = tmp_path / "c.toml"
    body = "interval = 2\n"
    path.write_text(body + "#" * (MAX_TOML_BYTES - len(body) - 1) + "\n")
    assert load(str(path)).interval_s == 2.0  # 1 MiB to the byte: read
    path.write_text(body + "#" * (MAX_TOML_BYTES - len(body)) + "\n")
    with pytest.raises(ConfigError, match="more than 1 MiB"):
        load(str(path))


@pytest.mark.parametrize(
    "text, value",
    [
        ('theme = "' + "[" * 500 + '"\n', "[" * 500),
        ("# " + "[" * 500 + " " + "9" * 5000 + "\ntheme = 'x'\n", "x"),
        ("theme = '''\n" + "{" * 500 + "'''\n", "{" * 500),
        ('theme = """' + "a." * 100 + 'b"""' + "\n", "a." * 100 + "b"),
        ('theme = """a\\"[[""""\n', 'a"[["'),  # an escaped quote, and a quote just before the end
        ("theme = '''a[''''\n", "a['"),
        ('theme = "[\\"[["\n', '["[['),
        ('theme = "t"\n[groups."a.b.c[".x]\n', "t"),
    ],
)
def test_what_only_looks_deep_or_long_inside_a_string_or_comment_is_read(text, value):
    assert parse_toml(text)["theme"] == value


def test_a_config_as_deep_as_dltui_needs_is_read(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(
        "interval = 9223372036854775807.0e-16\n"
        "groups = { train = { hosts = [\"gpu0*\"], rules = { gpu_temp_high = { warning = 80 } } } }\n"
    )
    cfg = load(str(path))
    assert cfg.groups["train"].rules == {"gpu_temp_high": {"warning": 80}}


@pytest.mark.parametrize("text, words", [REFUSED[0], REFUSED[3]])
def test_a_theme_file_beyond_a_limit_is_explained_and_skipped(tmp_path, text, words):
    (tmp_path / "deep.toml").write_text(text)
    (tmp_path / "fine.toml").write_text('primary = "#0178D4"\n')
    with pytest.raises(ThemeError) as err:
        load_theme(tmp_path / "deep.toml")
    assert str(err.value) == f"deep.toml: {words}"
    os.symlink("/dev/zero", tmp_path / "endless.toml")
    themes, problems = load_themes([tmp_path])
    assert [t.name for t in themes] == ["fine"]
    assert problems == [
        f"deep.toml: {words}",
        "endless.toml: more than 1 MiB: not a settings file (one is a few KiB)",
    ]


# -- the command line, as the user meets it -------------------------------------------------


def _dltui(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_STATE_HOME=str(home / "s"))
    env.pop("DLTUI_CONFIG", None)

    def cap_memory() -> None:  # a reader without a limit meets /dev/zero with MemoryError, not the machine's RAM
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    return subprocess.run([sys.executable, "-m", "dltui", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120, stdin=subprocess.DEVNULL, preexec_fn=cap_memory)


@pytest.mark.parametrize(
    "text, words",
    [
        (DEEP, "line 1: arrays or tables nested more than 32 deep"),
        (DECIMAL, "line 1: a number or bare key of 5000 characters (at most 128)"),
        (HEX, "line 1: a number or bare key of 5002 characters (at most 128)"),
        (None, "more than 1 MiB: not a settings file (one is a few KiB)"),
    ],
)
def test_every_crash_of_the_audit_is_one_line_and_the_usage_exit_code(tmp_path, text, words):
    """500-deep arrays, 5,000-digit integers (decimal and hex), ``--config /dev/zero``: each
    was a traceback with exit 1."""
    path = "/dev/zero"
    if text is not None:
        path = str(tmp_path / "bad.toml")
        Path(path).write_text(text)
    for command, code in ((["snapshot"], 3), (["demo"], 2), (["unit", "status", "a.service", "gpu01"], 2)):
        done = _dltui(*command, "--config", path, home=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (code, "", f"dltui: {path}: {words}\n"), command
