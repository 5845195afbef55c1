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
    assert cfg.groups["train"].hosts == ("gpu0*",)
    assert cfg.source == str(path)


def test_broken_toml_names_the_file(tmp_path):
    bad = tmp_path / "c.toml"
    bad.write_text("interval = = 1\n")
    with pytest.raises(ConfigError, match="c.toml: not valid TOML"):
        load(str(bad))


def test_a_named_file_that_does_not_exist_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load(str(tmp_path / "nope.toml"))


def test_an_interval_out_of_its_range_is_refused(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text("interval = 0\n")
    with pytest.raises(ConfigError, match="interval = 0: expected a number from 0.1 to 3600 s"):
        load(str(f))


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "5000", "soon"])
def test_an_interval_from_the_environment_out_of_range_is_refused(tmp_path, monkeypatch, value):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("DLTUI_INTERVAL", value)
    with pytest.raises(ConfigError, match="DLTUI_INTERVAL=.*: expected a number from 0.1 to 3600 seconds"):
        load()


@pytest.mark.parametrize(
    "text, words",
    [
        ("intervall = 5", "unknown key 'intervall' (did you mean 'interval'?)"),
        ('read_only = "false"', 'read_only = "false": expected true or false'),
        ('[ssh]\nconnect_timeout = "soon"', '[ssh] connect_timeout = "soon": expected a number from 0.1 to 600 s'),
        ("[ssh]\nconnect_timeout = -5", "[ssh] connect_timeout = -5: expected a number"),
        ("[ssh]\nknown_hosts = 5", "[ssh] known_hosts = 5: expected a string"),
        ("[ssh]\nkeepalive_cont = 3", "[ssh] unknown key 'keepalive_cont' (did you mean 'keepalive_count'?)"),
        ("[burnin]\ntemperature_max = 80", "[burnin] unknown key 'temperature_max' (did you mean 'temperature_max_c'?)"),
        ("[burnin]\nsmoke_s = inf", "[burnin] smoke_s = inf: expected a number from 1 to 86400 s"),
        ('[actions]\nprivilege = "doas"', "[actions] privilege: 'doas' is not one of sudo, polkit"),
        ('[groups.train]\nhosts = ["gpu*"]\nunit = ["a.service"]', "[groups.train] unknown key 'unit' (did you mean 'units'?)"),
        ('[groups.train]\nhosts = "gpu*"', '[groups.train] hosts = "gpu*": expected a list of strings'),
        ("[sssh]\nx = 1", "unknown key 'sssh' (did you mean 'ssh'?)"),
        ("ssh = 3", "[ssh] must be a table, not 3"),
    ],
)
def test_a_config_mistake_is_one_line_naming_the_key(tmp_path, text, words):
    f = tmp_path / "c.toml"
    f.write_text(text + "\n")
    with pytest.raises(ConfigError) as err:
        load(str(f))
    message = str(err.value)
    assert message.startswith(f"{f}: ") and "\n" not in message
    assert words in message


def test_every_table_is_typed_for_the_code_that_reads_it(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text(
        'read_only = true\n[ssh]\nidentity = ["~/.ssh/id_gpu"]\nkeepalive_count = 5\n'
        '[burnin]\noptional = []\npcie_replay_max = 10\n[groups.a]\nhosts = ["gpu*"]\n'
    )
    cfg = load(str(f))
    assert cfg.read_only is True
    assert cfg.ssh.identity == ("~/.ssh/id_gpu",) and cfg.ssh.keepalive_count == 5
    assert cfg.ssh.connect_timeout == 10.0  # the declared default
    assert cfg.burnin.optional == () and cfg.burnin.pcie_replay_max == 10
    assert cfg.groups["a"].hosts == ("gpu*",) and cfg.groups["a"].units is None


def test_a_config_path_that_is_a_folder_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="cannot read: Is a directory"):
        load(str(tmp_path))


def test_a_long_wrong_value_is_shown_cut_in_the_one_line(tmp_path):
    """A 100,000-character string where a number belongs: the line names it, not repeats it."""
    f = tmp_path / "c.toml"
    f.write_text('interval = "' + "x" * 100_000 + '"\n')
    with pytest.raises(ConfigError) as err:
        load(str(f))
    assert str(err.value) == (
        f'{f}: interval = "{"x" * 40}…" (100000 characters): expected a number from 0.1 to 3600 s'
    )
