"""upgrade-kernel: apply a pending kernel update, and its reboot, before the driver.

A driver built for the running kernel is useless if the next boot runs a newer one, and headers
for an old running kernel may be gone from the archive (umbrel-dev#17). So the order is: update
the system, reboot into the new kernel, then build the driver for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.facts import HostFacts
from gpuwizard.plan import APT_ENV, Action, Run, Target
from gpuwizard.steps.base import Check, apt_update
from gpuwizard.steps.kernels import next_boot_kernel


def kernel_pending(facts: HostFacts) -> bool:
    """A newer kernel is installed than the one running, or a package asked for a reboot."""
    boot = facts.boot
    return next_boot_kernel(facts) != boot.kernel or boot.reboot_required


@dataclass(frozen=True)
class UpgradeKernel:
    family: str
    id: str = "upgrade-kernel"
    title: str = "Apply the pending kernel update"
    why: str = (
        "A kernel update is waiting for a reboot. The driver module must be built for the kernel "
        "that will run, so the update is finished and the machine rebooted before the driver."
    )
    needs_reboot: bool = True
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    def check(self, facts: HostFacts) -> Check:
        pending = kernel_pending(facts)
        reason = (
            f"kernel {next_boot_kernel(facts)} waits for a reboot"
            if pending
            else f"running the newest kernel ({facts.boot.kernel})"
        )
        return Check(not pending, reason)

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        if self.family == "debian":
            upgrade = Run(
                ("apt-get", "-q", "-y", "-o", "DPkg::Lock::Timeout=600", "-o", "Dpkg::Options::=--force-confdef",
                 "-o", "Dpkg::Options::=--force-confold", "full-upgrade"),
                env=APT_ENV,
                timeout_s=3600,
            )  # fmt: skip
            return (apt_update(), upgrade)
        return (Run(("dnf", "-y", "-q", "upgrade"), timeout_s=3600),)

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
