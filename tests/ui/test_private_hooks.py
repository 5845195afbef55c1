"""dltui overrides Textual's private methods in one class, ``dltui.ui.frame_stats.HookedApp``,
and only where Textual 8.2.8 has no public hook:

- ``App._display``: the end of a frame (a key's latency ends at the paint after its action).
  Looked at and not enough: ``call_after_refresh`` (runs when the screen idles, after a paint or
  none), ``Screen.screen_layout_refresh_signal`` (layout changes only), the driver's ``write``
  (never called headless, where the tests and bench/ui_frames.py measure), the
  ``Idle`` and ``ScreenResume`` events (no paint of their own).
- ``App._handle_exception``, and the ``_exit_renderables`` that ``App._fatal_error`` fills: an
  unhandled error has no public hook, and Textual prints a traceback with its locals (node
  data) at exit unless that list is emptied.

An upgrade of Textual that changes any of these fails here: read the new source, check that the
override in ``HookedApp`` still holds (``_display`` still called once per screen update with the
renderable written in it; ``_handle_exception`` still the one path for an unhandled error,
``_exit_renderables`` still what is printed at exit), then record the new hash below.
"""

import hashlib
import importlib
import inspect
import pkgutil

import pytest
import textual
from textual.app import App
from textual.screen import Screen

import dltui.ui
from dltui.ui.frame_stats import HookedApp

from .demo_fleet import demo_app

CHECKED_WITH = "8.2.8"
# Textual's source of what HookedApp overrides or relies on -> its sha256 (first 16 digits)
RECORDED = {
    "App._display": "4b78dff6669a455c",  # overridden: the paint
    "App._handle_exception": "baea2e7f88e7ac52",  # overridden: the unhandled error
    "App._fatal_error": "2474616cec7fa94d",  # fills _exit_renderables with the traceback
    "Screen._compositor_refresh": "7a40efe563816a06",  # calls _display once per update
}


def _hash(function) -> str:
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()[:16]


def test_textuals_overridden_methods_are_the_ones_checked():
    owners = {"App": App, "Screen": Screen}
    changed = {
        name: _hash(getattr(owners[name.split(".")[0]], name.split(".")[1]))
        for name in RECORDED
    }
    changed = {name: digest for name, digest in changed.items() if digest != RECORDED[name]}
    assert not changed, (
        f"Textual {textual.__version__} changed {', '.join(changed)} since {CHECKED_WITH}: check "
        f"that dltui.ui.frame_stats.HookedApp's overrides still hold (this module's docstring "
        f"says what to look for), then record the new hashes {changed}"
    )


def _textual_privates_overridden(cls: type) -> set[str]:
    textual_bases = [b for b in cls.__mro__[1:] if b.__module__.split(".")[0] == "textual"]
    return {
        name
        for name, value in vars(cls).items()
        if name.startswith("_") and not name.startswith("__")
        and (inspect.isfunction(value) or isinstance(value, property))
        and any(name in vars(base) for base in textual_bases)
    }


def test_no_other_class_overrides_a_private_textual_method():
    """What Textual does not promise to keep stays in HookedApp, where the test above guards it."""
    found = {}
    for info in pkgutil.walk_packages(dltui.ui.__path__, "dltui.ui."):
        module = importlib.import_module(info.name)
        for cls in vars(module).values():
            if inspect.isclass(cls) and cls.__module__ == module.__name__ and cls is not HookedApp:
                if overridden := _textual_privates_overridden(cls):
                    found[f"{module.__name__}.{cls.__qualname__}"] = sorted(overridden)
    assert found == {}
    assert _textual_privates_overridden(HookedApp) == {"_display", "_handle_exception"}


async def test_an_unhandled_error_ends_the_app_as_one_line_without_a_traceback_of_locals(capsys):
    """What the ``_handle_exception`` override is for: exit 1, one printable line for the command
    line (node text may hold escapes), and no traceback with its locals printed by Textual."""
    app, _ = demo_app(nodes=2)

    def broken() -> None:
        raise RuntimeError("a node said \x1b[2J")

    with pytest.raises(RuntimeError):
        async with app.run_test() as pilot:
            app.call_later(broken)
            await pilot.pause()
    assert app.crashed == "RuntimeError: a node said ?[2J"
    assert app.return_code == 1
    printed = capsys.readouterr()
    assert "Traceback" not in printed.out + printed.err
