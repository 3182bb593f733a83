"""add-cuda-repo: NVIDIA's CUDA package repository, trusted through its signed-by keyring.

Debian 12/13 and Rocky 9 get the driver there, and every OS gets the CUDA toolkit, cuDNN and
DCGM from it. The key comes in NVIDIA's ``cuda-keyring`` package, which installs
/usr/share/keyrings/cuda-archive-keyring.gpg and a sources entry that names it with
``signed-by=`` — never ``apt-key``, deprecated since apt 2.1.8 and gone from Debian 13 [S23].
cuda-keyring 1.1-1 is the current file name in NVIDIA's snippets (UNCONFIRMED [S24]); the
download is over HTTPS and everything installed from the repository is then verified by apt.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.facts import HostFacts
from gpuwizard.paths import DOWNLOADS_DIR
from gpuwizard.plan import APT_ENV, Action, Run, Target
from gpuwizard.steps.base import Check, apt_update, fetch

CUDA_REPOS = "https://developer.download.nvidia.com/compute/cuda/repos"
KEYRING = "cuda-keyring_1.1-1_all.deb"


def repo_url(cuda_repo: str, repo_arch: str) -> str:
    return f"{CUDA_REPOS}/{cuda_repo}/{repo_arch}"


def has_cuda_repo(facts: HostFacts, family: str) -> bool:
    if family == "debian":
        return facts.installs.package_version("cuda-keyring") is not None
    return any(
        name.startswith("cuda-") and name.endswith(".repo") for name in facts.installs.repositories
    )


@dataclass(frozen=True)
class AddCudaRepo:
    family: str
    cuda_repo: str
    repo_arch: str
    id: str = "add-cuda-repo"
    title: str = "Add NVIDIA's CUDA repository"
    why: str = (
        "NVIDIA's repository carries the driver for Debian and Rocky, and the CUDA toolkit, cuDNN "
        "and DCGM for every OS. Its key is installed with NVIDIA's cuda-keyring package and bound "
        "to this repository only (signed-by), never trusted for all of apt."
    )
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST, Target.IMAGE)

    def check(self, facts: HostFacts) -> Check:
        present = has_cuda_repo(facts, self.family)
        return Check(
            present,
            f"NVIDIA's {self.cuda_repo} repository is {'configured' if present else 'not configured'}",
        )

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        base = repo_url(self.cuda_repo, self.repo_arch)
        if self.family == "debian":
            local = f"{DOWNLOADS_DIR}/{KEYRING}"
            return (
                fetch(f"{base}/{KEYRING}", local),
                Run(("dpkg", "-i", local), env=APT_ENV, timeout_s=300),
                apt_update(),
            )
        return (
            Run(("dnf", "-y", "-q", "install", "dnf-plugins-core"), timeout_s=900),
            Run(
                ("dnf", "config-manager", "--add-repo", f"{base}/cuda-{self.cuda_repo}.repo"),
                timeout_s=300,
            ),
        )

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
