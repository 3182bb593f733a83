"""The machine in a person's words: sizes, disks, network links, what the system runs in.

One place for the words both the command line (``detect``) and the TUI's Machine view use, so
the two never disagree: a virtual disk is never an "HDD", a link without a speed is "speed
unknown", a 331 MB disk is not "0.0 TB". Pure.
"""

from __future__ import annotations

from gpuwizard.core.facts import Disk, Hardware, HostFacts, Nic, Platform

HYPERVISORS = {
    "kvm": "KVM",
    "qemu": "QEMU",
    "amazon": "Amazon EC2",
    "google": "Google Compute Engine",
    "microsoft": "Hyper-V",
    "vmware": "VMware",
    "oracle": "VirtualBox",
    "xen": "Xen",
    "bochs": "Bochs",
    "parallels": "Parallels",
    "bhyve": "bhyve",
}
"""systemd-detect-virt's names, as their makers write them."""
_UNITS = ("B", "kB", "MB", "GB", "TB", "PB")


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """ "1 GPU", "4 GPUs", "2 processes": a count with its noun, never "GPU(s)"."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def gpuwizard_command(cli_args: tuple[str, ...] = ()) -> str:
    """How a person starts gpuwizard on this machine again: "gpuwizard", or with the arguments
    that choose it ("gpuwizard --simulate h100x8-ubuntu2204-fresh")."""
    return " ".join(("gpuwizard", *cli_args))


def human_bytes(size: int) -> str:
    """Decimal units, as disks are sold, three significant digits: "275 GB", "332 MB", "3.84 TB"."""
    value, unit = float(size), 0
    while value >= 1000 and unit < len(_UNITS) - 1:
        value, unit = value / 1000, unit + 1
    digits = 0 if value >= 100 or unit == 0 else 1 if value >= 10 else 2
    return f"{value:.{digits}f} {_UNITS[unit]}"


DISK_KINDS = {
    "nvme": "NVMe",
    "ssd": "SSD",
    "hdd": "HDD",
    "virtual": "virtual disk",
    "unknown": "disk of unknown kind",
}


def disk_words(disk: Disk) -> str:
    """ "vda 275 GB virtual disk", "nvme0n1 3.84 TB NVMe", "sda 4.00 TB HDD"."""
    return f"{disk.name} {human_bytes(disk.size_bytes)} {DISK_KINDS[disk.kind]}"


def nic_words(nic: Nic) -> str:
    """ "eth0 speed unknown", "ens3 25 Gb/s", "ibp26s0 400 Gb/s InfiniBand"."""
    speed = f"{nic.speed_mbps / 1000:g} Gb/s" if nic.speed_mbps else "speed unknown"
    return f"{nic.name} {speed}" + (" InfiniBand" if nic.kind == "infiniband" else "")


def infiniband_count(hardware: Hardware) -> int:
    """InfiniBand adapters: the HCAs on the PCI bus (each may have several ports), else the
    InfiniBand interfaces when the bus shows none (a VM given only its ports)."""
    return len(hardware.infiniband) or sum(1 for n in hardware.nics if n.kind == "infiniband")


def hypervisor_words(name: str) -> str:
    if name == "unknown":
        return "a VM (its hypervisor does not say which)"
    said = HYPERVISORS.get(name, name)
    return f"{'an' if said[:1].upper() in 'AEIOU' else 'a'} {said} VM"


def platform_words(platform: Platform) -> str | None:
    """ "docker container · on a VM (its hypervisor does not say which) · no systemd"; None on
    bare metal with systemd (nothing to say)."""
    parts = []
    if platform.wsl:
        parts.append("WSL2 on Windows")
    if platform.container:
        parts.append(f"{platform.container} container")
    if platform.virtualization and not platform.wsl:
        parts.append(
            ("on " if platform.container else "") + hypervisor_words(platform.virtualization)
        )
    if platform.systemd is False:
        parts.append("no systemd")
    return " · ".join(parts) or None


def fabric_words(hardware: Hardware) -> str:
    """ "4 NVSwitch, 8 InfiniBand adapters": the same count Sizing gives."""
    adapters = infiniband_count(hardware)
    return (
        f"{len(hardware.nvswitches)} NVSwitch, {adapters} InfiniBand "
        f"adapter{'' if adapters == 1 else 's'}"
    )


def torch_env_lines(facts: HostFacts) -> list[str]:
    """Each PyTorch found: "torch 2.11.0+cu130 (CUDA 13.0) in /opt/torch/.venv, Python 3.12 ·
    first on PATH"."""
    return [
        env.words() + (" · first on PATH" if env.on_path else "") for env in facts.python.torch_envs
    ]
