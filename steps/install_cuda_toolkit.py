"""install-cuda-toolkit: nvcc and the CUDA libraries, only when asked for, matched to the build.

PyTorch's wheels bring their own CUDA runtime, cuDNN and NCCL; the toolkit is needed only to
compile extensions, and then its version must match ``torch.version.cuda``. PATH and
LD_LIBRARY_PATH go into /etc/profile.d/ for every login shell, instead of editing a user's
~/.bashrc as the guide did.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.paths import CUDA_PROFILE
from gpuwizard.core.plan import Action, Target, WriteFile
from gpuwizard.steps.base import Check, install_packages, missing


def profile_script(version: str) -> str:
    home = f"/usr/local/cuda-{version}"
    return (
        f"# Written by gpuwizard: CUDA {version} for login shells (nvcc, libraries).\n"
        f'export CUDA_HOME="{home}"\n'
        f'export PATH="{home}/bin${{PATH:+:$PATH}}"\n'
        f'export LD_LIBRARY_PATH="{home}/lib64${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"\n'
    )


@dataclass(frozen=True)
class InstallCudaToolkit:
    family: str
    version: str
    id: str = "install-cuda-toolkit"
    title: str = "Install the CUDA toolkit (nvcc)"
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST, Target.IMAGE)

    @property
    def why(self) -> str:
        return (
            f"You asked for nvcc: CUDA {self.version}, the same version as the PyTorch build, so "
            "extensions you compile match it. PATH is set in /etc/profile.d, not in ~/.bashrc."
        )

    @property
    def packages(self) -> tuple[str, ...]:
        major, minor = self.version.split(".")
        return (f"cuda-toolkit-{major}-{minor}",)

    def check(self, facts: HostFacts) -> Check:
        absent = missing(facts, self.packages)
        script_ok = facts.installs.managed_files.get(CUDA_PROFILE) == profile_script(self.version)
        if absent:
            return Check(False, f"not installed: {' '.join(absent)}")
        return Check(
            script_ok,
            "toolkit and PATH set up" if script_ok else f"{CUDA_PROFILE} is missing or differs",
        )

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        install = (
            install_packages(self.family, self.packages) if missing(facts, self.packages) else ()
        )
        return (*install, WriteFile(CUDA_PROFILE, profile_script(self.version)))

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
