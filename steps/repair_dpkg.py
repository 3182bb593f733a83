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

from gpuwizard.facts import HostFacts
from gpuwizard.plan import APT_ENV, Action, Run, Target
from gpuwizard.steps.base import APT_LOCK_TIMEOUT_S, Check, done_when

PACKAGE_TOOLS = ("apt-get", "apt", "dpkg")
"""Commands that need a consistent dpkg database: an interrupted one is repaired before them
(by the runner, and by deploy.sh)."""


def configure_pending() -> Run:
    return Run(
        ("dpkg", "--force-confdef", "--force-confold", "--configure", "-a"),
        env=APT_ENV,
        timeout_s=3600,
    )


def fix_broken() -> Run:
    """Reinstall what dpkg left half-installed; refuse (rather than do) any removal."""
    return Run(
        (
            "apt-get", "-q", "-y", "--no-remove",
            "-o", f"DPkg::Lock::Timeout={APT_LOCK_TIMEOUT_S}",
            "-o", "Dpkg::Options::=--force-confdef",
            "-o", "Dpkg::Options::=--force-confold",
            "-f", "install",
        ),
        env=APT_ENV,
        timeout_s=3600,
    )  # fmt: skip


def is_repair(argv: tuple[str, ...]) -> bool:
    """One of the two repair commands (which must not wait for a repair themselves)."""
    return "--configure" in argv or ("-f" in argv and argv[:1] == ("apt-get",))


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
        return () if self.check(facts).satisfied else (configure_pending(), fix_broken())

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
