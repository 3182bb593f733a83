"""Kernel facts: release, installed kernels and their headers, loaded modules, Secure Boot.

The kernel that boots next is the newest one installed (Debian, Ubuntu and Rocky all default to
it), so headers must exist for it too, or DKMS builds no module and the next boot has no driver.
"""

from __future__ import annotations

import re

from gpuwizard.core.facts import SecureBootState
from gpuwizard.core.version import kernel_sort_key
from gpuwizard.machine.host import MISSING_TOOL, Host

# Loaded modules worth knowing about; /proc/modules lists a hundred others.
_INTERESTING_MODULES = re.compile(r"nvidia[A-Za-z0-9_]*|nouveau|ib_core|mlx5_core|nvidia_peermem")
KERNEL_RELEASE = re.compile(r"[0-9]+\.[0-9]+[A-Za-z0-9._+~-]*")
"""A kernel release as a folder of /lib/modules names it ("5.15.0-126-generic"): a folder named
otherwise (a carriage return, a shell word) is no kernel, and never reaches a plan."""
_EFI_GLOBAL = "8be4df61-93ca-11d2-aa0d-00e098032b8c"


def parse_proc_modules(text: str) -> tuple[str, ...]:
    names = (line.split(" ", 1)[0] for line in text.splitlines() if line.strip())
    return tuple(sorted(name for name in names if _INTERESTING_MODULES.fullmatch(name)))


def read_kernels(host: Host) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(installed kernel releases, those with headers), both oldest first."""
    installed = tuple(
        sorted(
            (name for name in host.listdir("/lib/modules") if KERNEL_RELEASE.fullmatch(name)),
            key=kernel_sort_key,
        )
    )
    with_headers = tuple(k for k in installed if host.exists(f"/lib/modules/{k}/build"))
    return installed, with_headers


def parse_mokutil_sb_state(output: str) -> SecureBootState:
    text = output.lower()
    if "secureboot enabled" in text:
        return "enabled"
    if "secureboot disabled" in text:
        return "disabled"
    if "not supported" in text or "doesn't support" in text:
        return "unsupported"
    return "unknown"


def parse_efi_secure_boot(data: bytes) -> SecureBootState:
    """The SecureBoot EFI variable: 4 attribute bytes, then 1 = enabled, 0 = disabled."""
    if len(data) < 5:
        return "unknown"
    return "enabled" if data[4] == 1 else "disabled"


SECURE_BOOT_COMMAND = ("mokutil", "--sb-state")


def read_secure_boot(host: Host) -> SecureBootState:
    out = host.run(SECURE_BOOT_COMMAND)
    if out.returncode != MISSING_TOOL:
        state = parse_mokutil_sb_state(out.stdout + out.stderr)
        if state != "unknown":
            return state
    if not host.is_dir("/sys/firmware/efi"):
        return "unsupported"  # legacy BIOS boot: no Secure Boot at all
    data = host.read_bytes(f"/sys/firmware/efi/efivars/SecureBoot-{_EFI_GLOBAL}")
    return parse_efi_secure_boot(data) if data is not None else "unknown"
