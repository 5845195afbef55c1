"""The exposition's label sets are built once and looked up after, in a cache that stays bounded."""

from __future__ import annotations

from dltui.export import page


def test_label_sets_are_escaped_once_and_the_cache_starts_over_at_its_bound(monkeypatch):
    monkeypatch.setattr(page, "LABEL_CACHE_MAX", 8)
    monkeypatch.setattr(page, "_LABELS", {})
    monkeypatch.setattr(page, "_JOINED", {})
    node = page.labels(("node", 'gpu"01'))
    assert node == 'node="gpu\\"01"' and page.labels(("node", 'gpu"01')) is node
    assert node + (("gpu", "0"),) == 'node="gpu\\"01",gpu="0"'
    assert node + page.labels(("gpu", None)) == node  # an unknown fact adds nothing
    for i in range(50):  # a fleet renamed fifty times over: never more than the bound
        page.labels(("node", f"n{i}")) + (("gpu", "0"),)
        assert len(page._LABELS) <= 8 and len(page._JOINED) <= 8
    assert page.labels(("node", "n49")) == 'node="n49"'
