"""install-dcgm: DCGM for GPU health and telemetry, and dcgm-exporter for Prometheus.

DCGM 4 comes from NVIDIA's CUDA repository (``datacenter-gpu-manager-4-core`` and the CUDA-major
specific package); the ``nvidia-dcgm`` service runs the host engine. dcgm-exporter runs as the
container NVIDIA publishes, when Docker is part of the setup [S19].
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.ops import Command, Service
from gpuwizard.core.plan import Action, Target
from gpuwizard.steps.base import Check, enable_service, install_packages, missing

UNIT = "nvidia-dcgm"
EXPORTER_IMAGE = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless"


@dataclass(frozen=True)
class InstallDcgm:
    family: str
    cuda_major: str
    with_exporter: bool
    id: str = "install-dcgm"
    title: str = "Install DCGM monitoring"
    why: str = (
        "DCGM watches GPU health (Xid errors, ECC, throttling) and feeds dcgm-exporter, which "
        "serves the metrics to Prometheus on port 9400, as the guide's monitoring section does."
    )
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    @property
    def packages(self) -> tuple[str, ...]:
        return ("datacenter-gpu-manager-4-core", f"datacenter-gpu-manager-4-cuda{self.cuda_major}")

    def check(self, facts: HostFacts) -> Check:
        absent = missing(facts, self.packages)
        if absent:
            return Check(False, f"not installed: {' '.join(absent)}")
        enabled = UNIT in facts.installs.services_enabled
        return Check(enabled, "DCGM installed and enabled" if enabled else f"{UNIT} is not enabled")

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        install = (
            install_packages(self.family, self.packages) if missing(facts, self.packages) else ()
        )
        actions: tuple[Action, ...] = (
            *install,
            enable_service(UNIT),
            Service("start", UNIT),
        )
        if self.with_exporter:
            actions += (
                Command(("docker", "run", "-d", "--name", "dcgm-exporter", "--gpus", "all", "--cap-add", "SYS_ADMIN",
                     "--restart", "unless-stopped", "-p", "9400:9400", EXPORTER_IMAGE), timeout_s=900),
            )  # fmt: skip
        return actions

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
