"""blacklist-nouveau: keep the open-source nouveau driver off the NVIDIA GPUs.

nouveau grabs the GPU before the NVIDIA driver can. A modprobe.d blacklist does nothing until
the initramfs is rebuilt, because nouveau loads from the initramfs (linux-surface#264), and it
takes effect only at the next boot; both are part of this step. ``options nouveau modeset=0``
keeps it from taking the console if something loads it anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.ops import Command
from gpuwizard.core.paths import NOUVEAU_CONF
from gpuwizard.core.plan import Action, Target, WriteFile
from gpuwizard.steps.base import Check

BLACKLIST = (
    "# Written by gpuwizard: the NVIDIA driver needs the GPUs; nouveau must not take them.\n"
    "blacklist nouveau\n"
    "options nouveau modeset=0\n"
)


def nouveau_in_use(facts: HostFacts) -> bool:
    return facts.boot.nouveau_loaded or any(g.pci.driver == "nouveau" for g in facts.hardware.gpus)


@dataclass(frozen=True)
class BlacklistNouveau:
    family: str
    id: str = "blacklist-nouveau"
    title: str = "Disable the nouveau driver"
    why: str = (
        "nouveau, the open-source driver, claims NVIDIA GPUs at boot and blocks the NVIDIA "
        "driver. The blacklist must also go into the initramfs, where nouveau is loaded from; "
        "it takes effect at the next boot."
    )
    needs_reboot: bool = True
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    def check(self, facts: HostFacts) -> Check:
        used = nouveau_in_use(facts)
        return Check(not used, "nouveau is loaded" if used else "nouveau is not loaded")

    def rebuild_initramfs(self) -> Command:
        if self.family == "debian":
            return Command(("update-initramfs", "-u", "-k", "all"), timeout_s=900)
        return Command(("dracut", "--regenerate-all", "--force"), timeout_s=900)

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        return (WriteFile(NOUVEAU_CONF, BLACKLIST), self.rebuild_initramfs())

    def verify(self, facts: HostFacts) -> Check:
        if nouveau_in_use(facts) and facts.installs.nouveau_blacklisted:
            return Check(
                False,
                "nouveau is still loaded although blacklisted: the initramfs was not rebuilt, or another one boots",
            )
        return self.check(facts)
