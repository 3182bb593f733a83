"""Server sizing checks from the guide, each a finding with a severity and a reason.

The guide's advice, made checkable: system RAM at least twice the total GPU memory, NVMe for
datasets, room on disk for the install, >= 10 Gb/s networking for multi-node training, an OS
that still gets updates, PCIe links trained at their full width and speed. Pure: facts in,
findings out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpuwizard.core.facts import HostFacts, NvmlOk
from gpuwizard.core.machine_words import counted, infiniband_count, platform_words
from gpuwizard.recommend.os_support import OsRows, is_guess, match_os

Severity = Literal["ok", "info", "warning", "error"]

GIB = 1024**3
INSTALL_NEEDS_BYTES = 20 * GIB  # driver ~1 GiB, a CUDA 13 PyTorch venv ~6 GiB, pip/apt caches
INSTALL_MINIMUM_BYTES = 10 * GIB
MULTI_NODE_MBPS = 10_000
MEMTOTAL_SHORT = 0.95
"""MemTotal is "physical RAM minus a few reserved bits and the kernel binary code" (proc(5)): a
64 GB server shows ~62 GiB. Within 5% of twice the GPU memory, the installed RAM meets the rule."""


@dataclass(frozen=True)
class Finding:
    """One thing sizing noticed about the host, with how much it matters and why."""

    id: str
    severity: Severity
    title: str
    reason: str


def gpu_memory_mib(facts: HostFacts) -> int | None:
    nvml = facts.boot.nvml
    if isinstance(nvml, NvmlOk) and nvml.gpus:
        return sum(g.memory_total_mib for g in nvml.gpus)
    sizes = [g.model.memory_gib for g in facts.hardware.gpus]
    if not sizes or any(s is None for s in sizes):
        return None
    return sum(s or 0 for s in sizes) * 1024


def check_ram(facts: HostFacts) -> Finding:
    ram = facts.hardware.memory_mib
    gpu = gpu_memory_mib(facts)
    if gpu is None:
        return Finding(
            "ram", "info", f"RAM {ram // 1024} GiB", "GPU memory unknown: cannot compare"
        )
    ratio = f"{ram // 1024} GiB RAM for {gpu // 1024} GiB of GPU memory"
    if ram >= 2 * gpu:
        return Finding("ram", "ok", ratio, "at least twice the GPU memory, as the guide advises")
    if ram >= 2 * gpu * MEMTOTAL_SHORT:
        return Finding(
            "ram",
            "ok",
            ratio,
            "twice the GPU memory once what the kernel reserves is counted, as the guide advises",
        )
    return Finding(
        "ram",
        "warning",
        ratio,
        f"the guide advises at least 2x the GPU memory ({2 * gpu // 1024} GiB) for data loading and checkpoints",
    )


def check_disks(facts: HostFacts) -> Finding:
    """Slow storage is said only on evidence: a rotational disk that names a real device's
    model; a virtual disk (virtio, Xen, Hyper-V, EBS) says rotational whatever is behind it."""
    disks = facts.hardware.disks
    kinds = {d.kind for d in disks}
    named = {kind: ", ".join(d.name for d in disks if d.kind == kind) for kind in kinds}
    if "nvme" in kinds:
        return Finding("disks", "ok", f"NVMe: {named['nvme']}", "fast local storage for datasets")
    if not disks and not facts.hardware.pci_visible:
        return Finding(
            "disks", "info", "disks unknown", "/sys could not be read; NVMe loads datasets fastest"
        )
    if kinds == {"hdd"}:
        return Finding(
            "disks",
            "warning",
            "only spinning disks",
            "datasets load far slower than from NVMe (the guide measured 20x)",
        )
    if "virtual" in kinds:
        return Finding(
            "disks",
            "info",
            f"virtual disks ({named['virtual']}): speed unknown",
            "the host decides what is behind them; `gpuwizard bench` measures the read speed",
        )
    if "ssd" in kinds:
        return Finding(
            "disks", "info", "no NVMe disk", "SSD or network storage; NVMe loads datasets fastest"
        )
    return Finding(
        "disks",
        "info",
        "disk kind unknown" + (f" ({named['unknown']})" if disks else ""),
        "the kernel names no model to tell an HDD from a virtual disk; `gpuwizard bench` "
        "measures the read speed",
    )


def check_free_space(facts: HostFacts) -> Finding:
    root = next((f for f in facts.hardware.free_space if f.path == "/"), None)
    if root is None:
        return Finding("free-space", "info", "free space unknown", "df gave no answer for /")
    free = f"{root.free_bytes / GIB:.0f} GiB free on /"
    if root.free_bytes >= INSTALL_NEEDS_BYTES:
        return Finding("free-space", "ok", free, "enough for the driver, PyTorch and caches")
    if root.free_bytes >= INSTALL_MINIMUM_BYTES:
        return Finding(
            "free-space",
            "warning",
            free,
            f"tight: the install needs about {INSTALL_NEEDS_BYTES // GIB} GiB with caches",
        )
    return Finding(
        "free-space",
        "error",
        free,
        f"not enough: the driver and PyTorch need at least {INSTALL_MINIMUM_BYTES // GIB} GiB",
    )


def check_network(facts: HostFacts) -> Finding:
    nics = facts.hardware.nics
    speeds = [n.speed_mbps for n in nics if n.speed_mbps]
    fastest = max(speeds, default=0)
    adapters = infiniband_count(facts.hardware)
    label = f"{fastest / 1000:g} Gb/s" if fastest else "link speed unknown"
    if adapters:
        return Finding(
            "network",
            "ok",
            f"{adapters} InfiniBand adapter{'s' if adapters > 1 else ''}, {label}",
            "RDMA for multi-node training",
        )
    if fastest >= MULTI_NODE_MBPS:
        return Finding("network", "ok", label, "enough for multi-node training")
    return Finding(
        "network", "info", label, "fine on one node; multi-node training wants at least 10 Gb/s"
    )


def check_os(facts: HostFacts, table: OsRows) -> Finding:
    os = facts.os
    if os is None:
        return Finding("os", "error", "unknown OS", "/etc/os-release is missing")
    row = match_os(table, os.id, os.version_id, os.id_like, os.version_codename)
    name = os.pretty_name or f"{os.id} {os.version_id}"
    if row is None:
        supported = ", ".join(o.label for o in table.operating_systems)
        return Finding("os", "error", name, f"not supported; gpuwizard installs on {supported}")
    if is_guess(row, os.id, os.version_id):
        return Finding(
            "os",
            "warning",
            name,
            f"newer than gpuwizard's table: treated as {row.label}, the newest known release before it",
        )
    if row.standard_support_end < table.reviewed[:7]:
        return Finding(
            "os",
            "warning",
            name,
            f"left standard support in {row.standard_support_end}"
            + (f" ({row.note})" if row.note else ""),
        )
    return Finding("os", "ok", name, f"supported until {row.standard_support_end}")


def check_pcie(facts: HostFacts) -> Finding | None:
    degraded = [g for g in facts.hardware.gpus if g.pci.link and g.pci.link.is_degraded]
    if not degraded:
        return None
    link = degraded[0].pci.link
    assert link is not None
    return Finding(
        "pcie",
        "warning",
        f"PCIe link below maximum on {counted(len(degraded), 'GPU')}",
        f"{degraded[0].pci.address}: x{link.width_current} {link.speed_current} of "
        f"x{link.width_max} {link.speed_max}; reseat the card or check the riser",
    )


NO_SYSTEMD = (
    "without systemd the install runs as a detached process (setsid), not a systemd unit: it "
    "survives a dropped SSH session, not a restart of the machine"
)


def check_platform(facts: HostFacts) -> Finding | None:
    """What the system runs in, and what follows for the setup."""
    platform = facts.platform
    words = platform_words(platform) or ""
    runner = f"; {NO_SYSTEMD}" if platform.systemd is False else ""
    if platform.wsl:
        return Finding(
            "platform",
            "info",
            words or "WSL2",
            "the GPU driver comes from Windows; gpuwizard sets up Python and PyTorch only" + runner,
        )
    if platform.container:
        return Finding(
            "platform",
            "warning",
            words,
            "the driver belongs to the host: only Python and PyTorch can be set up here" + runner,
        )
    if platform.systemd is False:
        return Finding("platform", "info", words, NO_SYSTEMD)
    return None


def assess(facts: HostFacts, table: OsRows) -> tuple[Finding, ...]:
    """Every sizing finding for a host, most important kinds first."""
    found = [
        check_os(facts, table),
        check_platform(facts),
        check_ram(facts),
        check_disks(facts),
        check_free_space(facts),
        check_network(facts),
        check_pcie(facts),
    ]
    return tuple(f for f in found if f is not None)
