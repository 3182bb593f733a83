"""install-headers: kernel headers for every kernel the driver module is built for.

DKMS builds nvidia.ko against the headers of each kernel; without them the package installs
"successfully" and the next boot has no driver (zen-kernel#305). Headers are installed for the
kernel that boots next, and for the running one unless a newer one replaces it: by name where
apt still has them, else the flavour's metapackage (``linux-headers-cloud-amd64``), which brings
the headers of the newest kernel of that flavour (upgrade-kernel installs that kernel first).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.kernels import headers_packages, kernels_needing_modules
from gpuwizard.core.plan import Action, Target
from gpuwizard.steps.base import Check, install_packages


@dataclass(frozen=True)
class InstallHeaders:
    family: str
    id: str = "install-headers"
    title: str = "Install kernel headers"
    why: str = (
        "The driver's kernel module is compiled on this machine (DKMS) against the kernel headers; "
        "without headers for the kernel that boots next, the next boot has no driver."
    )
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    def missing_kernels(self, facts: HostFacts) -> list[str]:
        have = facts.boot.kernels_with_headers
        return [k for k in kernels_needing_modules(facts) if k not in have]

    def packages(self, facts: HostFacts, kernels: list[str]) -> list[str]:
        if self.family == "debian":
            return headers_packages(facts, tuple(kernels))
        return [name for k in kernels for name in (f"kernel-devel-{k}", f"kernel-headers-{k}")]

    def check(self, facts: HostFacts) -> Check:
        absent = self.missing_kernels(facts)
        reason = (
            f"no headers for {', '.join(absent)}"
            if absent
            else "headers present for " + ", ".join(kernels_needing_modules(facts))
        )
        return Check(not absent, reason)

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        absent = self.missing_kernels(facts)
        return install_packages(self.family, self.packages(facts, absent)) if absent else ()

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
