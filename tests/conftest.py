import pytest

pytest_plugins = ["tests.collect_guard"]


@pytest.fixture(autouse=True)
def _own_state_dir(tmp_path_factory, monkeypatch):
    """Every test (and every dltui it starts) keeps its GPU inventory and audit log in a state
    directory of its own: never the machine's ~/.local/state, where a test's fake GPUs would
    later read as GPUs gone from this machine."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
