"""add-cuda-repo: NVIDIA's CUDA package repository, trusted through its own key only.

Debian 12/13 and Rocky 9 get the driver there, and every OS gets the CUDA toolkit, cuDNN and
DCGM from it. Its signing key is downloaded and checked against the fingerprint pinned in
gpuwizard's data (a key is trusted for everything its repository serves, so never on the
server's word), then bound to this repository alone: on apt in
/usr/share/keyrings/cuda-archive-keyring.gpg with ``signed-by=`` (the paths NVIDIA's cuda-keyring
package uses, so installing that package later finds the same entry) [S23][S24], never
``apt-key``; on dnf as the ``gpgkey`` of a repository file gpuwizard writes itself, instead of a
.repo file downloaded from the server. Everything installed from the repository is then
verified by apt or dnf against that key.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.plan import Action, Target, WriteFile
from gpuwizard.steps.base import Check, apt_update, fetch, unconfirmed_note

CUDA_REPOS = "https://developer.download.nvidia.com/compute/cuda/repos"
APT_KEYRING = "/usr/share/keyrings/cuda-archive-keyring.gpg"
RPM_KEY = "/etc/pki/rpm-gpg/RPM-GPG-KEY-cuda"
# NVIDIA's key file per repository (cuda-repo-management SIGNATURES.md): the 2022 RPM key for
# every RHEL repository, a newer key for debian13, the 2022 Debian-family key for the rest.
KEY_FILES = {
    "debian13": "8793F200.pub",
    "rhel8": "D42D0685.pub",
    "rhel9": "D42D0685.pub",
    "rhel10": "D42D0685.pub",
}
"""NVIDIA re-keyed only debian13; the RPM repositories have their own key (SIGNATURES.md)."""
DEBIAN_KEY_FILE = "3bf863cc.pub"


def repo_url(cuda_repo: str, repo_arch: str) -> str:
    return f"{CUDA_REPOS}/{cuda_repo}/{repo_arch}"


def key_url(cuda_repo: str, repo_arch: str) -> str:
    return f"{repo_url(cuda_repo, repo_arch)}/{KEY_FILES.get(cuda_repo, DEBIAN_KEY_FILE)}"


def source_file(family: str, cuda_repo: str, repo_arch: str) -> str:
    if family == "debian":
        return f"/etc/apt/sources.list.d/cuda-{cuda_repo}-{repo_arch}.list"
    return f"/etc/yum.repos.d/cuda-{cuda_repo}-{repo_arch}.repo"


def has_cuda_repo(facts: HostFacts, family: str) -> bool:
    if family == "debian" and facts.installs.package_version("cuda-keyring") is not None:
        return True
    wanted = (".list", ".sources") if family == "debian" else (".repo",)
    return any(
        name.startswith("cuda-") and name.endswith(wanted) for name in facts.installs.repositories
    )


def repo_file(cuda_repo: str, repo_arch: str) -> str:
    """dnf's entry for the repository, its key the one checked on the way in."""
    name = f"cuda-{cuda_repo}-{repo_arch}"
    return (
        f"[{name}]\nname={name}\nbaseurl={repo_url(cuda_repo, repo_arch)}\nenabled=1\n"
        f"gpgcheck=1\ngpgkey=file://{RPM_KEY}\n"
    )


@dataclass(frozen=True)
class AddCudaRepo:
    family: str
    cuda_repo: str
    repo_arch: str
    id: str = "add-cuda-repo"
    title: str = "Add NVIDIA's CUDA repository"
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST, Target.IMAGE)

    @property
    def why(self) -> str:
        return (
            "NVIDIA's repository carries the driver for Debian and Rocky, and the CUDA toolkit, cuDNN "
            "and DCGM for every OS. Its key is checked against the fingerprint gpuwizard pins and "
            "bound to this repository only (signed-by), never trusted for all of apt."
            + unconfirmed_note(key_url(self.cuda_repo, self.repo_arch))
        )

    def check(self, facts: HostFacts) -> Check:
        present = has_cuda_repo(facts, self.family)
        return Check(
            present,
            f"NVIDIA's {self.cuda_repo} repository is {'configured' if present else 'not configured'}",
        )

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        key = key_url(self.cuda_repo, self.repo_arch)
        entry = source_file(self.family, self.cuda_repo, self.repo_arch)
        if self.family == "debian":
            base = repo_url(self.cuda_repo, self.repo_arch)
            return (
                fetch(key, APT_KEYRING, dearmor=True),
                WriteFile(entry, f"deb [signed-by={APT_KEYRING}] {base}/ /\n"),
                apt_update(),
            )
        return (
            fetch(key, RPM_KEY, armor=True),
            WriteFile(entry, repo_file(self.cuda_repo, self.repo_arch)),
        )

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
