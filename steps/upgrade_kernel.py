"""upgrade-kernel: apply a pending kernel update, and its reboot, before the driver.

A driver built for the running kernel is useless if the next boot runs a newer one, and headers
for an old running kernel may be gone from the archive (umbrel-dev#17). So the order is: update
the system, reboot into the new kernel, then build the driver for it. Where the running kernel's
headers are gone and no newer kernel is installed yet, this step installs the newest kernel of
the running flavour together with its headers (the flavour's metapackages), and the reboot that
follows starts it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.kernels import headers_gone, next_boot_kernel
from gpuwizard.core.ops import AptUpgrade, DnfUpgrade
from gpuwizard.core.plan import Action, Target
from gpuwizard.steps.base import Check, apt_install, apt_update


def kernel_pending(facts: HostFacts) -> bool:
    """A newer kernel is installed than the one running, or a package asked for a reboot."""
    boot = facts.boot
    return next_boot_kernel(facts) != boot.kernel or boot.reboot_required


def gone_reason(facts: HostFacts, flavour: str) -> str:
    return (
        f"the headers of the running kernel {facts.boot.kernel} are no longer in the archive: "
        f"the newest {flavour} kernel and its headers come first, then a reboot into it"
    )


@dataclass(frozen=True)
class UpgradeKernel:
    family: str
    headers_flavour: str | None = None
    """Set when the running kernel's headers are gone from the archive (kernels.headers_gone)."""
    id: str = "upgrade-kernel"
    needs_reboot: bool = True
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    @property
    def title(self) -> str:
        if self.headers_flavour:
            return (
                f"Install the newest {self.headers_flavour} kernel and its headers "
                "(the running kernel's headers are gone from the archive)"
            )
        return "Apply the pending kernel update"

    @property
    def why(self) -> str:
        if self.headers_flavour:
            return (
                "The driver's module is built against the kernel headers, and the archive no longer "
                "has those of the running kernel. The newest kernel of the same flavour is installed "
                f"with its headers (linux-image-{self.headers_flavour}, "
                f"linux-headers-{self.headers_flavour}); the reboot that follows starts it, and the "
                "driver is built for it."
            )
        return (
            "A kernel update is waiting for a reboot. The driver module must be built for the kernel "
            "that will run, so the update is finished and the machine rebooted before the driver."
        )

    def check(self, facts: HostFacts) -> Check:
        flavour = headers_gone(facts)
        if flavour:
            return Check(False, gone_reason(facts, flavour))
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
        flavour = headers_gone(facts)
        if self.family == "debian" and flavour:
            return apt_install((f"linux-image-{flavour}", f"linux-headers-{flavour}"))
        if self.family == "debian":
            return (apt_update(), AptUpgrade())
        return (DnfUpgrade(),)

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
