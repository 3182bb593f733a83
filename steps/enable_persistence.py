"""enable-persistence: keep the driver initialised between jobs (nvidia-persistenced).

Without it the driver tears the GPUs down when the last process exits and pays seconds of
initialisation at the next one; benchmarks and short jobs see it as lost time.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.plan import Action, Target
from gpuwizard.steps.base import Check, done_when, enable_service

UNIT = "nvidia-persistenced"


@dataclass(frozen=True)
class EnablePersistence:
    id: str = "enable-persistence"
    title: str = "Enable persistence mode (nvidia-persistenced)"
    why: str = (
        "Keeps the driver loaded and the GPUs initialised between jobs, so each new process does "
        "not pay seconds of start-up; NVIDIA recommends it on compute servers."
    )
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    def check(self, facts: HostFacts) -> Check:
        enabled = UNIT in facts.installs.services_enabled
        return done_when(enabled, f"{UNIT} is enabled", f"{UNIT} is not enabled")

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        return () if self.check(facts).satisfied else (enable_service(UNIT),)

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
