"""System configuration the install steps change: modprobe blacklists, built modules,
package repositories, services, the files gpuwizard writes, the MOK key, and the
verification report. Steps compare these facts with what they would do."""

from __future__ import annotations

import json
import re

from gpuwizard.core.codec import CodecError, from_jsonable
from gpuwizard.core.facts import MokState, SecureBootState, VerifyReport
from gpuwizard.core.paths import (
    APT_SOURCES_DIR,
    MANAGED_FILES,
    MANAGED_SERVICES,
    MOK_PUBLIC_KEY,
    VERIFY_REPORT,
    YUM_REPOS_DIR,
)
from gpuwizard.machine.host import MISSING_TOOL, Host

MODPROBE_DIRS = ("/etc/modprobe.d", "/usr/lib/modprobe.d", "/lib/modprobe.d")
_BLACKLIST = re.compile(r"^\s*blacklist\s+nouveau\s*$", re.MULTILINE)
# The driver's core module under every name the distributions give it: nvidia.ko (NVIDIA's and
# Ubuntu's packages, RPM kmods), Debian's DKMS renames it after its package: nvidia-current.ko,
# nvidia-current-open.ko, nvidia-tesla-535.ko, nvidia-legacy-390xx.ko (dkms.conf DEST_MODULE_NAME,
# read from the bookworm packages on 2026-12-03). Never nvidia-modeset, -drm, -uvm or -peermem.
_NVIDIA_KO = re.compile(
    r"nvidia(-(current|tesla-[0-9]+|legacy-[0-9a-z]+))?(-open)?\.ko(\.xz|\.zst|\.gz)?"
)
# Where the module lands: DKMS (updates/dkms), RPM kmods (extra), Ubuntu's signed prebuilt
# modules (kernel/nvidia-<branch>srv).
_MODULE_DIRS = ("updates/dkms", "extra", "updates")


def parse_blacklists(texts: list[str]) -> bool:
    return any(_BLACKLIST.search(text) for text in texts)


def read_nouveau_blacklisted(host: Host) -> bool:
    texts = [
        host.read_text(f"{folder}/{name}") or ""
        for folder in MODPROBE_DIRS
        for name in host.listdir(folder)
        if name.endswith(".conf")
    ]
    return parse_blacklists(texts)


def read_nvidia_module_kernels(host: Host) -> tuple[str, ...]:
    found = []
    for kernel in host.listdir("/lib/modules"):
        base = f"/lib/modules/{kernel}"
        folders = [f"{base}/{d}" for d in _MODULE_DIRS]
        folders += [
            f"{base}/kernel/{d}" for d in host.listdir(f"{base}/kernel") if d.startswith("nvidia")
        ]
        if any(_NVIDIA_KO.fullmatch(name) for folder in folders for name in host.listdir(folder)):
            found.append(kernel)
    return tuple(found)


def read_repositories(host: Host) -> tuple[str, ...]:
    return tuple(sorted((*host.listdir(APT_SOURCES_DIR), *host.listdir(YUM_REPOS_DIR))))


def parse_is_enabled(units: tuple[str, ...], output: str) -> tuple[str, ...]:
    """``systemctl is-enabled A B`` prints one state per unit, in order."""
    states = output.split()
    return tuple(unit for unit, state in zip(units, states, strict=False) if state == "enabled")


SERVICES_COMMAND = ("systemctl", "is-enabled", *MANAGED_SERVICES)


def read_services_enabled(host: Host) -> tuple[str, ...]:
    out = host.run(SERVICES_COMMAND)
    return () if out.returncode == MISSING_TOOL else parse_is_enabled(MANAGED_SERVICES, out.stdout)


def read_managed_files(host: Host) -> dict[str, str]:
    return {path: text for path in MANAGED_FILES if (text := host.read_text(path)) is not None}


def parse_mok_test_key(output: str) -> MokState:
    text = output.lower()
    if "already enrolled" in text:
        return "enrolled"
    if "already in the enrollment request" in text:
        return "pending"
    return "not-enrolled" if "not enrolled" in text else "unknown"


def read_mok(host: Host, secure_boot: SecureBootState) -> MokState:
    """Whether the firmware trusts the DKMS signing key; asked only where Secure Boot is on.

    Debian's dkms makes its own key on the first build, so a key often exists on machines
    without Secure Boot, where its enrollment does not matter ("unknown": not asked).
    """
    if not host.exists(MOK_PUBLIC_KEY):
        return "no-key"
    if secure_boot != "enabled":
        return "unknown"
    out = host.run(["mokutil", "--test-key", MOK_PUBLIC_KEY])
    return parse_mok_test_key(out.stdout + out.stderr)


def read_verification(host: Host) -> VerifyReport | None:
    """The last verify-torch report; a missing or damaged file is simply no report."""
    text = host.read_text(VERIFY_REPORT)
    if text is None:
        return None
    try:
        return from_jsonable(VerifyReport, json.loads(text))
    except (json.JSONDecodeError, CodecError):
        return None
