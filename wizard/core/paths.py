"""Well-known paths on the target machine, shared by the steps that write them and the detection
that reads them back. Absolute target paths only: the Host joins them to its root.
"""

from __future__ import annotations

STATE_DIR = "/var/lib/gpuwizard"
"""The runner's journal, events, logs and lock (0700, root)."""

PREFIX = "/opt/gpuwizard"
ENVS_DIR = f"{PREFIX}/envs"
"""Virtual environments gpuwizard creates: /opt/gpuwizard/envs/<name>."""
DEFAULT_ENV = f"{ENVS_DIR}/pytorch"
"""The environment the wizard creates unless told otherwise."""
MINIFORGE_DIR = f"{PREFIX}/miniforge"
PYTHONS_DIR = f"{PREFIX}/python"
"""Standalone CPython interpreters installed by uv when the system's is too old."""
TOOLS_DIR = f"{PREFIX}/bin"
DOWNLOADS_DIR = "/var/cache/gpuwizard"
VERIFY_REPORT = f"{STATE_DIR}/verify.json"
"""Written by the verify-torch step: what the target environment's torch saw on the GPUs."""

NOUVEAU_CONF = "/etc/modprobe.d/gpuwizard-blacklist-nouveau.conf"
CUDA_PROFILE = "/etc/profile.d/gpuwizard-cuda.sh"
NCCL_CONF = "/etc/nccl.conf"
DOCKER_DAEMON_JSON = "/etc/docker/daemon.json"
LOGIN_BANNER = "/etc/profile.d/gpuwizard-resume.sh"
APT_SOURCES_DIR = "/etc/apt/sources.list.d"
DEBIAN_NONFREE_SOURCES = f"{APT_SOURCES_DIR}/gpuwizard-debian-nonfree.sources"
"""contrib, non-free and non-free-firmware for Debian's own driver (enable-debian-nonfree)."""
YUM_REPOS_DIR = "/etc/yum.repos.d"
MOK_PUBLIC_KEY = "/var/lib/dkms/mok.pub"

# Configuration files whose whole content the steps decide; detection reads them so that a
# step's check can compare what is there with what it would write.
MANAGED_FILES = (NOUVEAU_CONF, CUDA_PROFILE, NCCL_CONF, DOCKER_DAEMON_JSON)

# Services whose enabled state the steps set (systemctl is-enabled answers one line each).
MANAGED_SERVICES = ("nvidia-persistenced", "nvidia-fabricmanager", "docker", "nvidia-dcgm")
