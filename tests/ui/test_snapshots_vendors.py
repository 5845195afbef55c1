"""Pictures of the mixed fleet (NVIDIA H100 nodes, an AMD MI300X node, an Intel Gaudi 3 node) on
the seeded demo (fixed size, frozen clock). Each docstring says what the picture must show.
Regenerate with ``--snapshot-update`` and look."""

import pytest

from .demo_fleet import charts_drawn, demo_app, feed

pytestmark = pytest.mark.oldest_python_only  # pictures: Textual draws the same SVG on every Python

FULL = (160, 48)


def _fed(app, demo):
    async def run_before(pilot):
        feed(app, demo)
        await charts_drawn(app, pilot)

    return run_before


def test_mixed_vendor_fleet(snap_compare):
    """The mixed fleet: H100 nodes, gpu09 an AMD MI300X node whose cells read the junction
    temperature ("81j": MI300X has no edge sensor) with ▲1 and its XGMI alert in NOTE, gpu12 an
    Intel Gaudi 3 node whose GPU6 reads "err" (hl-smi gives no readings for that AIP) with ▲ and
    its alert in NOTE."""
    app, demo = demo_app()
    assert snap_compare(app, terminal_size=FULL, run_before=_fed(app, demo))


def test_node_screen_of_the_amd_mi300x_node(snap_compare):
    """gpu09: the header names amdgpu 6.8.5, its SMC firmware and 8× AMD Instinct MI300X; the
    critical XGMI alert on GPU5 in AMD's words (amd-smi xgmi, the ROCm Validation Suite) and the
    NVIDIA-only rules listed as n/a here; each pane titled "AMD Instinct MI300X", its temperature
    line the hotspot (junction; no edge sensor), its detail line hotspot and XGMI errors, no
    T.Limit margin, P-state or row remapping, ECC as RAS counts, and AMD's own throttle status."""
    app, demo = demo_app()
    assert snap_compare(app, press=["j"] * 8 + ["enter"], terminal_size=FULL, run_before=_fed(app, demo))
