"""install-cudnn: a system cuDNN 9 from NVIDIA's repository, only when asked for.

PyTorch ships its own cuDNN (nvidia-cudnn-cu12/cu13 wheels); a system copy is for other
frameworks or extensions. The guide's hand-copied cuDNN 8 into /usr/local/cuda would shadow the
right library through LD_LIBRARY_PATH, so it is never done.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.plan import Action, Target
from gpuwizard.steps.base import Check, install_packages, missing


@dataclass(frozen=True)
class InstallCudnn:
    family: str
    cuda_major: str
    id: str = "install-cudnn"
    title: str = "Install cuDNN 9"
    why: str = (
        "You asked for a system cuDNN. PyTorch brings its own; this copy serves other software. "
        "It comes as packages from NVIDIA's repository, matched to the CUDA major version."
    )
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST, Target.IMAGE)

    @property
    def packages(self) -> tuple[str, ...]:
        return (f"cudnn9-cuda-{self.cuda_major}",)

    def check(self, facts: HostFacts) -> Check:
        absent = missing(facts, self.packages)
        return Check(
            not absent, f"not installed: {' '.join(absent)}" if absent else "cuDNN 9 installed"
        )

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        return () if self.check(facts).satisfied else install_packages(self.family, self.packages)

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
