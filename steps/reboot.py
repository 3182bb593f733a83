"""reboot: the reboot a step asked for, as a step of its own that the user confirms.

The runner records the boot_id, stops and asks; the machine is the truth afterwards: a changed
boot_id means the reboot happened, and the steps waiting for it are verified on fresh facts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpuwizard.facts import HostFacts, NvmlOk
from gpuwizard.plan import Action, Run, Target
from gpuwizard.steps.base import Check
from gpuwizard.steps.blacklist_nouveau import nouveau_in_use

Condition = Callable[[HostFacts], "list[str]"]


def driver_pending(branch: str) -> Condition:
    """Why a reboot is still needed for the driver: the list is empty once it is loaded."""

    def reasons(facts: HostFacts) -> list[str]:
        out = []
        nvml = facts.boot.nvml
        if not isinstance(nvml, NvmlOk) or nvml.driver_version.split(".")[0] != branch:
            now = nvml.driver_version if isinstance(nvml, NvmlOk) else nvml.reason
            out.append(f"driver R{branch} is not loaded ({now})")
        if nouveau_in_use(facts):
            out.append("nouveau is loaded")
        if facts.boot.reboot_required:
            out.append("a package asked for a reboot")
        return out

    return reasons


@dataclass(frozen=True)
class Reboot:
    pending: Condition
    id: str = "reboot"
    title: str = "Reboot"
    why: str = (
        "The new kernel modules load at boot: nouveau leaves, the NVIDIA driver arrives. After the "
        "reboot, log in again and run gpuwizard: it checks everything again and continues."
    )
    needs_reboot: bool = True
    reboot: bool = True
    targets: tuple[Target, ...] = (Target.HOST,)

    def check(self, facts: HostFacts) -> Check:
        reasons = self.pending(facts)
        return Check(not reasons, "; ".join(reasons) if reasons else "nothing waits for a reboot")

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        return () if self.check(facts).satisfied else (Run(("reboot",), timeout_s=120),)

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
