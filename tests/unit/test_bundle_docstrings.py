"""The AMD SMI binding ships without its docstrings: every docstring goes, at any depth, and
nothing else does (its licence notice travels as a string)."""

import ast

from dltui.node import bundle

SOURCE = '''# Copyright (c) a vendor
# MIT licence text
"""The module's docstring."""
import os


class Handle:
    """A class docstring."""

    def close(self):
        """A method docstring."""
        return os.sep

    def only_doc(self):
        """Nothing else in this body."""


if os.name == "posix":
    def on_posix():
        """In an if."""
        x = "not a docstring"
        return x
else:
    def elsewhere():
        """In an else."""
try:
    def tried():
        """In a try."""
except ImportError:
    def handled():
        """In an except clause."""
finally:
    def last():
        """In a finally."""
for _ in ():
    def looped():
        """In a loop."""
with open(os.devnull) as f:
    def within():
        """In a with."""
value = (lambda: "a lambda's string stays")()
'''


def docstrings(tree):
    """Every docstring, found the slow sure way: every node of the tree."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                found.append(doc)
    return found


def test_every_docstring_goes_at_any_depth_and_the_licence_stays():
    assert len(docstrings(ast.parse(SOURCE))) == 11
    stripped = bundle.without_docstrings(SOURCE)
    tree = ast.parse(stripped)
    assert docstrings(tree) == []
    namespace: dict = {}
    exec(compile(tree, "<amdsmi>", "exec"), namespace)
    assert namespace["_LICENCE"] == "Copyright (c) a vendor\nMIT licence text\n"
    assert namespace["value"] == "a lambda's string stays"
    assert namespace["Handle"]().only_doc() is None  # an emptied body becomes ``pass``
    assert "not a docstring" in stripped
