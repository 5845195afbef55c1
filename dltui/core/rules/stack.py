"""The software stack (probe/stack.py, read once per connection): ``stack_unlocked`` and
``reboot_pending``. Version drift across nodes is the fleet rules' (fleet.py)."""

from __future__ import annotations

from typing import TypedDict

from ..models import Sample, StackFacts
from ..timeline import INFO, WARNING
from ..vendors import vendors_of
from .base import CLEAR, NODE, Finding, Rule
from .memory import NodeMemory

_LISTED = 4  # package names spelled out in a message; the rest are counted


class StackUnlockedParams(TypedDict):
    """``[rules.stack_unlocked]`` (its defaults in RULES below)."""

    warning: bool
    enabled: bool


def _stack(node: NodeMemory) -> StackFacts | None:
    return node.facts.stack if node.facts is not None else None


def stack_unlocked(sample: Sample, node: NodeMemory, p: StackUnlockedParams) -> object:
    """The driver packages are not held while automatic upgrades may replace them."""
    stack = _stack(node)
    if stack is None or stack.driver_held is None or stack.auto_upgrades is None:
        return None  # no driver packages (a .run install), or not a dpkg/rpm system
    if stack.driver_held or not stack.auto_upgrades or stack.auto_upgrades_skip_driver:
        return CLEAR
    unheld = stack.driver_packages_unheld or []
    names = ", ".join(unheld[:_LISTED]) + (
        f" and {len(unheld) - _LISTED} more" if len(unheld) > _LISTED else ""
    )
    drivers = " / ".join(v.label for v in vendors_of(node.facts.gpus)) if node.facts else ""
    drivers = drivers or "NVIDIA"  # the packages this probe counts: every vendor's on the node
    mismatch = {
        "NVIDIA": "an upgrade under the loaded kernel module ends in 'Driver/library version mismatch'",
    }.get(drivers, "an upgrade under the loaded kernel module leaves the tools and the driver out of step")
    if stack.package_manager == "rpm":
        what = f"the {drivers} driver is not version-locked"
        fix = "dnf versionlock add the driver packages; upgrade the driver by hand, then reboot"
    else:
        what = f"{drivers} driver packages not held ({names})"
        fix = (
            f"apt-mark hold {' '.join(unheld)} (or list them in "
            "Unattended-Upgrade::Package-Blacklist); upgrade the driver by hand, then reboot"
        )
    return Finding(
        WARNING if p["warning"] else INFO,
        f"{what} while automatic upgrades may replace them ({stack.auto_upgrades_source})",
        fix,
        detail=mismatch,
        evidence={"unheld": unheld, "auto_upgrades_source": stack.auto_upgrades_source},
        lasting=False,
    )


def reboot_pending(sample: Sample, node: NodeMemory, p: dict) -> object:
    """Something installed waits for a reboot: reboot-required, a newer kernel, a newer driver."""
    stack = _stack(node)
    if stack is None:
        return None
    if not stack.reboot_reasons:
        return CLEAR
    return Finding(
        INFO,
        "reboot pending: " + "; ".join(stack.reboot_reasons),
        "reboot when the node is drained, so what runs is what was installed",
        evidence={"reasons": list(stack.reboot_reasons)},
        lasting=False,
    )


RULES = (
    Rule(
        "stack_unlocked",
        NODE,
        stack_unlocked,
        {"warning": True},
        "NVIDIA driver packages not held (dpkg) / version-locked (dnf) while automatic upgrades "
        "are on; warning, or info with warning = false",
        slow=True,
        concerns="driver_held",
    ),
    Rule(
        "reboot_pending",
        NODE,
        reboot_pending,
        {},
        "a reboot waits: /run/reboot-required, a newer kernel installed than running, or newer "
        "NVIDIA packages than the loaded module (info)",
        slow=True,
        concerns="reboot",
    ),
)
