"""The node screen's top line: which node, its status and reason, sample age, and its facts."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from dltui.core import format as fmt
from dltui.core.state import NodeState
from dltui.core.vendors import driver_words, models_words

from .. import levels
from .pane import lines_on, same


class NodeHeader(Static):
    DEFAULT_CSS = """
    NodeHeader {
        height: auto;
        max-height: 3;
        padding: 0 1;
        background: $panel;
    }
    """

    _drawn: Content | None = None
    _drawn_from: tuple | None = None  # what the drawing was made of: unchanged, nothing is built
    _facts_of: object = None  # the NodeFacts the facts line was made from (replaced, never changed)
    _facts_line: Content | None = None

    def show(self, node: NodeState, now: float, thresholds: levels.Thresholds) -> None:
        level, word = levels.node_status(node, now, thresholds)
        age = fmt.age(node.age(now))
        # called on every tick (twice a second), the age changes once a second at most and the
        # rest far more rarely: the words it is made of are compared before any Content is built
        made_of = (node.name, level, word, node.reason, age, node.interval_s)
        if made_of == self._drawn_from and node.facts is self._facts_of:
            return
        self._drawn_from = made_of
        status: list = [(f"{levels.STATUS_GLYPH[level]} {word}", levels.STYLE[level])]
        if node.reason:
            status.append((f": {node.reason}", levels.STYLE[level]))
        line1 = Content.assemble(
            (node.name, "bold $text-primary"),
            "  ",
            *status,
            ("  · sample ", "$foreground-muted"),
            age,
            (" ago", "$foreground-muted"),
            ("  · every ", "$foreground-muted"),
            fmt.duration(node.interval_s),
        )
        if self._facts_line is None or node.facts is not self._facts_of:  # a new hello: new facts
            self._facts_of, self._facts_line = node.facts, _facts(node)
        content = Content("\n").join([line1, self._facts_line])
        old = self._drawn
        if old is not None and same(content, old):
            return
        self._drawn = content
        # a layout pass only when the header may change height (a long reason wraps)
        self.update(content, layout=old is None or lines_on(self, content) != lines_on(self, old))


def _facts(node: NodeState) -> Content:
    f = node.facts
    if f is None:
        return Content.styled("facts not known yet", "$foreground-muted")
    gpus = models_words(f.gpus)
    parts: list = [
        (f.os or "OS n/a", ""),
        ("  kernel ", "$foreground-muted"),
        f.kernel or fmt.NA,
        ("  · ", "$foreground-muted"),
        f"{fmt.num(f.cpu_count)} CPUs",
        ("  · ", "$foreground-muted"),
        f"{fmt.size(f.memory_total_bytes)} RAM",
    ]
    if f.gpu_source:
        for i, (what, version) in enumerate(driver_words(f)):  # each vendor's driver (and CUDA)
            parts += [(f"  {'· ' if i == 0 else ''}{what} ", "$foreground-muted"), version or fmt.NA]
        parts += [("  · ", "$foreground-muted"), gpus or "no GPUs"]
    else:
        parts += [("  · ", "$foreground-muted"), (f.gpu_note or "no GPUs", "$text-warning")]
    return Content.assemble(*parts)
