"""Settings come from the command line, then DLTUI_* variables, then the TOML file."""

import pytest

from dltui.config import ConfigError, load


def test_missing_default_file_gives_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("DLTUI_CONFIG", raising=False)
    cfg = load()
    assert cfg.interval_s == 1.0 and cfg.theme == "dltui-dark" and cfg.source is None


def test_file_values_and_environment_override(tmp_path, monkeypatch):
    path = tmp_path / "dltui" / "config.toml"
    path.parent.mkdir()
    path.write_text('interval = 2.5\ntheme = "dltui-light"\n[rules.gpu_temp_high]\nwarning = 80\n'
                    '[groups.train]\nhosts = ["gpu0*"]\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("DLTUI_THEME", "dltui-high-contrast")
    cfg = load()
    assert cfg.interval_s == 2.5
    assert cfg.theme == "dltui-high-contrast"
    assert cfg.rules == {"gpu_temp_high": {"warning": 80}}
    assert cfg.groups["train"]["hosts"] == ["gpu0*"]
    assert cfg.source == str(path)


def test_broken_toml_names_the_file(tmp_path):
    bad = tmp_path / "c.toml"
    bad.write_text("interval = = 1\n")
    with pytest.raises(ConfigError, match="c.toml: not valid TOML"):
        load(str(bad))


def test_a_named_file_that_does_not_exist_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load(str(tmp_path / "nope.toml"))


def test_nonpositive_interval_is_refused(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text("interval = 0\n")
    with pytest.raises(ConfigError, match="interval must be positive"):
        load(str(f))


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_a_nonpositive_interval_from_the_environment_is_refused(tmp_path, monkeypatch, value):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("DLTUI_INTERVAL", value)
    with pytest.raises(ConfigError, match="must be positive"):
        load()
