"""Where the OS runs and what it is busy with: architecture, VM / container / WSL, cloud-init,
pending reboots."""

from __future__ import annotations

import re

from gpuwizard.core.facts import BootMark, CloudInitState, Platform
from gpuwizard.machine.host import MISSING_TOOL, Host

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def parse_boot_id(text: str | None) -> str | None:
    """A boot_id only when it reads as a UUID: a failed or partial read is unknown, never "new"."""
    value = (text or "").strip().lower()
    return value if _UUID.fullmatch(value) else None


BOOT_ID = "/proc/sys/kernel/random/boot_id"
PROC_STAT = "/proc/stat"
_BTIME = re.compile(r"^btime\s+([0-9]{1,18})\s*$", re.MULTILINE)


def parse_btime(text: str | None) -> int | None:
    """/proc/stat's ``btime`` line (when the boot began, seconds since the epoch); None without one."""
    match = _BTIME.search(text or "")
    return int(match.group(1)) if match else None


def read_boot_mark(host: Host) -> BootMark:
    """This boot's id and start time, read alone: cheap enough to ask several times a second."""
    return BootMark(parse_boot_id(host.read_text(BOOT_ID)), parse_btime(host.read_text(PROC_STAT)))


UNAME_COMMAND = ("uname", "-m")
CONTAINER_COMMAND = ("systemd-detect-virt", "--container")
VM_COMMAND = ("systemd-detect-virt", "--vm")
CLOUD_INIT_COMMAND = ("cloud-init", "status")


def _detect_virt(host: Host, command: tuple[str, ...]) -> str | None:
    out = host.run(command)
    value = out.stdout.strip()
    return value if out.returncode == 0 and value and value != "none" else None


SYSTEMD_RUNNING = "/run/systemd/system"
"""Exists exactly when systemd is the init system (sd_booted(3)): no systemd, no systemd-run."""
DMI_FILES = tuple(
    f"/sys/class/dmi/id/{name}"
    for name in ("product_name", "sys_vendor", "board_vendor", "bios_vendor")
)
DMI_VENDORS = (
    ("KVM", "kvm"), ("Amazon EC2", "amazon"), ("QEMU", "qemu"), ("VMware", "vmware"),
    ("VMW", "vmware"), ("innotek GmbH", "oracle"), ("Oracle Corporation", "oracle"),
    ("Xen", "xen"), ("Bochs", "bochs"), ("Parallels", "parallels"), ("BHYVE", "bhyve"),
)  # fmt: skip
"""systemd's own table (src/basic/virt.c, detect_vm_dmi_vendor): a DMI field that starts so."""
HYPERVISOR_UNNAMED = "unknown"
"""A hypervisor is there (the CPU's hypervisor flag) but neither systemd nor DMI name it."""
_CPU_FLAGS = re.compile(r"^flags\s*:(.*)$", re.MULTILINE)


def hypervisor_from_files(host: Host) -> str | None:
    """Where systemd-detect-virt is missing (a minimal image, a microVM): DMI as systemd reads
    it, else the hypervisor flag the kernel lists in /proc/cpuinfo (CPUID leaf 1, bit 31)."""
    for path in DMI_FILES:
        value = (host.read_text(path, 256) or "").strip()
        if name := next((n for prefix, n in DMI_VENDORS if value.startswith(prefix)), None):
            return name
    flags = _CPU_FLAGS.search(host.read_text("/proc/cpuinfo", 64 * 1024) or "")
    return HYPERVISOR_UNNAMED if flags and "hypervisor" in flags.group(1).split() else None


def read_virtualization(host: Host) -> str | None:
    """The hypervisor, as systemd-detect-virt names it; from files where it is not installed."""
    out = host.run(VM_COMMAND)
    if out.returncode == MISSING_TOOL:
        return hypervisor_from_files(host)
    value = out.stdout.strip()
    return value if out.returncode == 0 and value and value != "none" else None


def read_platform(host: Host, kernel_release: str) -> Platform:
    arch = host.run(UNAME_COMMAND).stdout.strip() or "unknown"
    wsl = "microsoft" in kernel_release.lower() or host.exists("/usr/lib/wsl/lib")
    container = _detect_virt(host, CONTAINER_COMMAND)
    if container is None and (host.exists("/.dockerenv") or host.exists("/run/.containerenv")):
        container = "docker" if host.exists("/.dockerenv") else "podman"
    if container == "wsl":
        container = None
    return Platform(
        arch=arch,
        virtualization=read_virtualization(host),
        container=container,
        wsl=wsl,
        systemd=host.is_dir(SYSTEMD_RUNNING),
    )


def parse_cloud_init_status(returncode: int, output: str) -> CloudInitState:
    """``cloud-init status``: exit 2 means finished with recoverable errors (cloud-init 23.4+)."""
    if returncode == MISSING_TOOL:
        return "absent"
    match = re.search(r"^status:\s*(.+)$", output, re.MULTILINE)
    status = match.group(1).strip() if match else ""
    if status in ("running", "not started", "not run"):
        return "running"
    if status == "disabled":
        return "disabled"
    if status == "error" or returncode == 1:
        return "error"
    if status == "degraded done" or returncode == 2:
        return "degraded"
    return "done" if status == "done" else "unknown"


def read_cloud_init(host: Host) -> CloudInitState:
    out = host.run(CLOUD_INIT_COMMAND)
    return parse_cloud_init_status(out.returncode, out.stdout)


def read_reboot_required(host: Host) -> tuple[bool, tuple[str, ...]]:
    """Debian policy 9.12: packages touch /run/reboot-required and list themselves in .pkgs."""
    if not host.exists("/run/reboot-required"):
        return False, ()
    pkgs = host.read_text("/run/reboot-required.pkgs") or ""
    return True, tuple(sorted({line.strip() for line in pkgs.splitlines() if line.strip()}))
