"""install-fabric-manager: NVSwitch systems need Fabric Manager, at exactly the driver's version.

On HGX boards the GPUs talk through NVSwitches that Fabric Manager configures; without it CUDA
reports no usable devices, and a Fabric Manager whose version differs from the driver's refuses
to start.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.plan import Action, Target
from gpuwizard.steps.base import Check, enable_service, install_packages, missing

UNIT = "nvidia-fabricmanager"


@dataclass(frozen=True)
class InstallFabricManager:
    family: str
    branch: str
    id: str = "install-fabric-manager"
    title: str = "Install NVIDIA Fabric Manager (NVSwitch)"
    why: str = (
        "This server's GPUs are connected through NVSwitches, which Fabric Manager sets up; "
        "without it CUDA sees no usable GPU. It must match the driver version exactly."
    )
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    @property
    def packages(self) -> tuple[str, ...]:
        return (
            (f"nvidia-fabricmanager-{self.branch}",)
            if self.family == "debian"
            else ("nvidia-fabric-manager",)
        )

    def check(self, facts: HostFacts) -> Check:
        absent = missing(facts, self.packages)
        enabled = UNIT in facts.installs.services_enabled
        if absent:
            return Check(False, f"not installed: {' '.join(absent)}")
        return Check(
            enabled,
            "Fabric Manager installed and enabled" if enabled else "Fabric Manager is not enabled",
        )

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        install = (
            install_packages(self.family, self.packages) if missing(facts, self.packages) else ()
        )
        return (*install, enable_service(UNIT))

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
