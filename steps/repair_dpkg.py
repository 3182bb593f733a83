"""repair-dpkg: finish an interrupted dpkg before anything else uses apt.

"dpkg was interrupted, you must manually run 'dpkg --configure -a'" blocks every later apt call.
It is run non-interactively, keeping local config files, so it cannot hang on a conffile prompt
(delphix/appliance-build#861). ``dpkg --configure -a`` finishes what was unpacked but not
configured; a package killed in the middle of its unpack is left "half-installed", which only
reinstalling it repairs, so ``apt-get -f install`` follows (exit 0 from dpkg alone still leaves
``dpkg --audit`` complaining; measured on Debian 12, REAL-ROOT B6). It never removes a package
(``--no-remove``: apt stops instead). Lock files are never deleted.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.ops import AptFixBroken, DpkgConfigure
from gpuwizard.core.plan import Action, Target
from gpuwizard.steps.base import Check, done_when


@dataclass(frozen=True)
class RepairDpkg:
    id: str = "repair-dpkg"
    title: str = "Repair an interrupted package database"
    why: str = (
        "A previous apt or dpkg run was interrupted; until it is finished every install fails. "
        "dpkg --configure -a completes it, keeping your configuration files, and apt-get -f "
        "install reinstalls a package that was cut off mid-unpack (it never removes one)."
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
        return () if self.check(facts).satisfied else (DpkgConfigure(), AptFixBroken())

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
