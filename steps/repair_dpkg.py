"""repair-dpkg: finish an interrupted dpkg before anything else uses apt.

"dpkg was interrupted, you must manually run 'dpkg --configure -a'" blocks every later apt call.
It is run non-interactively, keeping local config files, so it cannot hang on a conffile prompt
(delphix/appliance-build#861). Lock files are never deleted.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.facts import HostFacts
from gpuwizard.plan import APT_ENV, Action, Run, Target
from gpuwizard.steps.base import Check, done_when


def configure_pending() -> Run:
    return Run(
        ("dpkg", "--force-confdef", "--force-confold", "--configure", "-a"),
        env=APT_ENV,
        timeout_s=3600,
    )


@dataclass(frozen=True)
class RepairDpkg:
    id: str = "repair-dpkg"
    title: str = "Repair an interrupted package database"
    why: str = (
        "A previous apt or dpkg run was interrupted; until it is finished every install fails. "
        "dpkg --configure -a completes it, keeping your configuration files."
    )
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    def check(self, facts: HostFacts) -> Check:
        return done_when(
            not facts.boot.dpkg_interrupted,
            "the package database is consistent",
            "dpkg was interrupted",
        )

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        return () if self.check(facts).satisfied else (configure_pending(),)

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
