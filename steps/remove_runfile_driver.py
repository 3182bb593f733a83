"""remove-runfile-driver: uninstall a driver installed with NVIDIA's .run installer.

A runfile driver and packaged driver files overwrite each other's libraries and modules; the
result fails in ways that look random (aws-parallelcluster-hpc-quickstart#72). The runfile's own
uninstaller removes it cleanly before packages are installed.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.ops import Command
from gpuwizard.core.plan import Action, Target
from gpuwizard.steps.base import Check, done_when


@dataclass(frozen=True)
class RemoveRunfileDriver:
    id: str = "remove-runfile-driver"
    title: str = "Remove the driver installed by NVIDIA's .run installer"
    why: str = (
        "A driver installed from a .run file conflicts with the packaged driver (both own "
        "libnvidia-* and nvidia.ko). Its uninstaller removes it before packages go in."
    )
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    def check(self, facts: HostFacts) -> Check:
        return done_when(
            not facts.installs.runfile_driver,
            "no runfile driver",
            "a runfile-installed driver is present",
        )

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        return (Command(("nvidia-uninstall", "--silent"), timeout_s=900),)

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
