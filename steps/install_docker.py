"""install-docker and install-container-toolkit: containers that see the GPUs.

Docker comes from the distribution (docker.io on Ubuntu and Debian) or Docker's repository on
Rocky (docker-ce). The NVIDIA Container Toolkit comes from NVIDIA's repository. Each vendor key
is checked against the fingerprint gpuwizard pins before it is installed and bound to its own
repository (signed-by on apt; the gpgkey of a repository file gpuwizard writes itself on dnf,
rather than a .repo file downloaded from the server). ``nvidia-ctk runtime configure`` would
rewrite /etc/docker/daemon.json; instead
the nvidia runtime is merged into the existing file here, keeping every other key
(nvidia-docker#490), refusing to touch a file that is not valid JSON (nvidia-docker#761), and
putting the old file back if docker does not restart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.ops import Service
from gpuwizard.core.paths import DOCKER_DAEMON_JSON
from gpuwizard.core.plan import Action, Target, WriteFile
from gpuwizard.steps.base import (
    Check,
    PlanError,
    enable_service,
    fetch,
    install_packages,
    missing,
)

TOOLKIT_KEY_URL = "https://nvidia.github.io/libnvidia-container/gpgkey"
TOOLKIT_KEYRING = "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg"
TOOLKIT_LIST = "/etc/apt/sources.list.d/nvidia-container-toolkit.list"
TOOLKIT_APT = "https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH)"
TOOLKIT_RPM_KEY = "/etc/pki/rpm-gpg/RPM-GPG-KEY-nvidia-container-toolkit"
TOOLKIT_REPO_FILE = "/etc/yum.repos.d/nvidia-container-toolkit.repo"
TOOLKIT_REPO = (
    "[nvidia-container-toolkit]\n"
    "name=nvidia-container-toolkit\n"
    "baseurl=https://nvidia.github.io/libnvidia-container/stable/rpm/$basearch\n"
    "repo_gpgcheck=1\n"
    "gpgcheck=0\n"
    "enabled=1\n"
    f"gpgkey=file://{TOOLKIT_RPM_KEY}\n"
)
"""NVIDIA's stable/rpm/nvidia-container-toolkit.repo (NVIDIA/libnvidia-container, gh-pages), with
the key it names checked and kept locally: NVIDIA signs the repository metadata, not each rpm."""
DOCKER_KEY_URL = "https://download.docker.com/linux/rhel/gpg"
DOCKER_RPM_KEY = "/etc/pki/rpm-gpg/RPM-GPG-KEY-docker-ce"
DOCKER_REPO_FILE = "/etc/yum.repos.d/docker-ce.repo"
DOCKER_CE_REPO = (
    "[docker-ce-stable]\n"
    "name=Docker CE Stable - $basearch\n"
    "baseurl=https://download.docker.com/linux/rhel/$releasever/$basearch/stable\n"
    "enabled=1\n"
    "gpgcheck=1\n"
    f"gpgkey=file://{DOCKER_RPM_KEY}\n"
)
"""Docker's stable rpm repository (download.docker.com/linux/rhel/<version>/<arch>/stable, as
Docker's RHEL install page lays it out), its packages checked against Docker's pinned key."""
NVIDIA_RUNTIME = {"path": "nvidia-container-runtime", "args": []}


def docker_packages(family: str) -> tuple[str, ...]:
    return ("docker.io",) if family == "debian" else ("docker-ce", "docker-ce-cli", "containerd.io")


@dataclass(frozen=True)
class InstallDocker:
    family: str
    id: str = "install-docker"
    title: str = "Install Docker"
    why: str = (
        "The guide's container route: Docker from the distribution (Ubuntu, Debian) or from "
        "Docker's repository (Rocky), started at boot."
    )
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    def check(self, facts: HostFacts) -> Check:
        absent = missing(facts, docker_packages(self.family))
        enabled = "docker" in facts.installs.services_enabled
        if absent:
            return Check(False, f"not installed: {' '.join(absent)}")
        return Check(
            enabled, "Docker installed and enabled" if enabled else "docker.service is not enabled"
        )

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        actions: tuple[Action, ...] = ()
        if missing(facts, docker_packages(self.family)):
            if self.family == "rhel":
                actions += (
                    fetch(DOCKER_KEY_URL, DOCKER_RPM_KEY, armor=True),
                    WriteFile(DOCKER_REPO_FILE, DOCKER_CE_REPO),
                )
            actions += install_packages(self.family, docker_packages(self.family))
        return (*actions, enable_service("docker"))

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)


def merged_daemon_json(current: str | None) -> str:
    """daemon.json with the nvidia runtime added and every existing key kept."""
    try:
        data = json.loads(current) if current and current.strip() else {}
    except json.JSONDecodeError as error:
        raise PlanError(
            f"{DOCKER_DAEMON_JSON} is not valid JSON ({error.msg}, line {error.lineno}); "
            "fix it first: it is left untouched"
        ) from None
    if not isinstance(data, dict):
        raise PlanError(
            f"{DOCKER_DAEMON_JSON} is not a JSON object; fix it first, it is left untouched"
        )
    existing = data.get("runtimes")
    runtimes: dict[str, object] = dict(existing) if isinstance(existing, dict) else {}
    merged = {**data, "runtimes": {**runtimes, "nvidia": NVIDIA_RUNTIME}}
    return json.dumps(merged, indent=4) + "\n"


def has_nvidia_runtime(current: str | None) -> bool:
    try:
        data = json.loads(current or "{}")
    except json.JSONDecodeError:
        return False
    return (
        isinstance(data, dict)
        and isinstance(data.get("runtimes"), dict)
        and "nvidia" in data["runtimes"]
    )


@dataclass(frozen=True)
class InstallContainerToolkit:
    family: str
    id: str = "install-container-toolkit"
    title: str = "Install the NVIDIA Container Toolkit"
    why: str = (
        "Lets `docker run --gpus all` reach the GPUs. Docker's daemon.json gets the nvidia runtime "
        "merged in, every existing setting kept; if docker will not restart, the old file is restored."
    )
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    def check(self, facts: HostFacts) -> Check:
        if missing(facts, ("nvidia-container-toolkit",)):
            return Check(False, "nvidia-container-toolkit is not installed")
        configured = has_nvidia_runtime(facts.installs.managed_files.get(DOCKER_DAEMON_JSON))
        return Check(
            configured,
            "docker has the nvidia runtime"
            if configured
            else "docker's daemon.json lacks the nvidia runtime",
        )

    def repository(self) -> tuple[Action, ...]:
        if self.family == "rhel":
            return (
                fetch(TOOLKIT_KEY_URL, TOOLKIT_RPM_KEY, armor=True),
                WriteFile(TOOLKIT_REPO_FILE, TOOLKIT_REPO),
            )
        source = f"deb [signed-by={TOOLKIT_KEYRING}] {TOOLKIT_APT} /\n"
        return (
            fetch(TOOLKIT_KEY_URL, TOOLKIT_KEYRING, dearmor=True),
            WriteFile(TOOLKIT_LIST, source),
        )

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        daemon = merged_daemon_json(facts.installs.managed_files.get(DOCKER_DAEMON_JSON))
        actions: tuple[Action, ...] = ()
        if missing(facts, ("nvidia-container-toolkit",)):
            actions += self.repository() + install_packages(
                self.family, ("nvidia-container-toolkit",)
            )
        return (
            *actions,
            WriteFile(DOCKER_DAEMON_JSON, daemon, backup=True),
            Service("restart", "docker", timeout_s=300),
        )

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
