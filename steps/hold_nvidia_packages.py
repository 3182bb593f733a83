"""hold-nvidia-packages: stop unattended upgrades from replacing the driver under a running
module ("Failed to initialize NVML: Driver/library version mismatch", shine-cluster#30)."""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.ops import AptHold
from gpuwizard.core.plan import Action, Target
from gpuwizard.steps.base import Check


@dataclass(frozen=True)
class HoldNvidiaPackages:
    packages: tuple[str, ...]
    id: str = "hold-nvidia-packages"
    title: str = "Hold the driver packages"
    why: str = (
        "Unattended upgrades may update the driver's libraries while the old kernel module is "
        "loaded; every CUDA program then fails until a reboot. Holding the packages prevents "
        "that; undo with `apt-mark unhold` when you choose to upgrade."
    )
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    def unheld(self, facts: HostFacts) -> list[str]:
        return [p for p in self.packages if p not in facts.installs.held_packages]

    def check(self, facts: HostFacts) -> Check:
        loose = self.unheld(facts)
        return Check(
            not loose, f"not held: {' '.join(loose)}" if loose else "driver packages are held"
        )

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        loose = self.unheld(facts)
        return (AptHold(tuple(loose)),) if loose else ()

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
