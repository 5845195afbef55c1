"""The probe bundle ships its modules with comment-only lines emptied (fewer bytes to every
node); what runs there must be what runs here: the same code, line for line."""

import pytest

from dltui.node import bundle


@pytest.mark.parametrize("name", sorted(bundle.sources()))
def test_probe_module_compiles_to_the_same_code_without_its_comment_lines(name):
    source = bundle.sources()[name]
    stripped = bundle.without_comment_lines(source)
    # code objects compare their bytecode, constants (nested code too), names and line tables
    assert compile(stripped, name, "exec") == compile(source, name, "exec")
    assert stripped.count("\n") == source.count("\n")  # tracebacks keep their line numbers


def test_probe_bundle_is_smaller_without_comment_lines():
    mods = bundle.sources()
    plain = sum(len(bundle.zlib.compress(src.encode(), 9)) for src in mods.values())
    assert len(bundle.compress(mods)) < plain


def test_only_whole_comment_lines_after_the_leading_block_are_emptied():
    # (a "#" line inside a multi-line string would be emptied too: the first test would fail
    # for the module that had one)
    source = "# a licence\n\n# its last line\nx = 1\n# a comment\n    # indented\nx = 1  # kept: code\ny = '#'\n"
    assert bundle.without_comment_lines(source) == (
        "# a licence\n\n# its last line\nx = 1\n\n\nx = 1  # kept: code\ny = '#'\n"
    )


def test_pynvmls_licence_notice_travels_with_the_shipped_copy():
    """BSD-3-Clause: a redistributed copy of the source keeps its copyright notice."""
    shipped = bundle.without_comment_lines(bundle.sources()["pynvml"])
    assert "# Copyright (c)" in shipped and "Redistributions of source code must retain" in shipped
