"""Detection: read the machine through a ``Host`` and return ``HostFacts``.

One module per family of facts; this one only composes them. Every read goes through the host
door, so the same code runs on a real server, a recorded host and the simulation, and
``capture-host`` records exactly what this reads.
"""

from __future__ import annotations

from pathlib import Path

from gpuwizard.core import gpus
from gpuwizard.core.facts import (
    SCHEMA,
    Boot,
    Gpu,
    Hardware,
    HostFacts,
    Nvml,
    NvmlOk,
    OsInfo,
    PciDevice,
)
from gpuwizard.machine.detect import config, installs, kernel, os_release, pci, platform, system
from gpuwizard.machine.detect.installs import read_dpkg
from gpuwizard.machine.detect.nvml import probe_nvml
from gpuwizard.machine.dpkgdb import DpkgDatabase
from gpuwizard.machine.host import Host, SubprocessRunner, session_environ

DEBIAN_FAMILY = frozenset({"debian", "ubuntu"})


def os_family(os: OsInfo | None) -> str:
    """ "debian" for Debian and Ubuntu derivatives, "rhel" for RHEL-likes, else the ID."""
    if os is None:
        return "unknown"
    ids = (os.id, *os.id_like)
    if any(i in DEBIAN_FAMILY for i in ids):
        return "debian"
    if any(i in ("rhel", "fedora", "centos") for i in ids):
        return "rhel"
    return os.id


def local_host() -> Host:
    """The real machine: root /, real commands, real NVML."""
    return Host(root=Path("/"), run=SubprocessRunner(), nvml=probe_nvml, environ=session_environ())


def detect_boot(host: Host, dpkg: DpkgDatabase | None) -> Boot:
    release = (host.read_text("/proc/sys/kernel/osrelease") or "").strip()
    release = release if kernel.KERNEL_RELEASE.fullmatch(release) else ""  # "": unknown
    installed, with_headers = kernel.read_kernels(host)
    reboot_required, reboot_pkgs = platform.read_reboot_required(host)
    module_version = host.read_text("/sys/module/nvidia/version")
    mark = platform.read_boot_mark(host)
    return Boot(
        boot_id=mark.boot_id,
        btime=mark.btime,
        kernel=release,
        installed_kernels=installed,
        kernels_with_headers=with_headers,
        modules=kernel.parse_proc_modules(host.read_text("/proc/modules") or ""),
        nvidia_module_version=module_version.strip() if module_version else None,
        secure_boot=kernel.read_secure_boot(host),
        cloud_init=platform.read_cloud_init(host),
        reboot_required=reboot_required,
        reboot_required_packages=reboot_pkgs,
        dpkg_interrupted=dpkg is not None and dpkg.interrupted,
        nvml=host.nvml(),
    )


def gpus_only_in_nvml(nvml: Nvml, seen: set[str]) -> list[Gpu]:
    """GPUs the driver reports but sysfs does not show: WSL2 reaches them through /dev/dxg."""
    if not isinstance(nvml, NvmlOk):
        return []
    found = []
    for gpu in nvml.gpus:
        if gpu.pci_bus_id in seen:
            continue
        model = gpus.model_for_name(gpu.name) or gpus.unknown_model("0000", gpu.name)
        device = PciDevice(gpu.pci_bus_id, gpus.NVIDIA_VENDOR, model.device_id, "030200")
        found.append(Gpu(pci=device, model=model))
    return found


def detect_hardware(host: Host, nvml: Nvml) -> tuple[Hardware, str]:
    devices = pci.scan(host)
    found, switches, pci_ids_version = pci.classify(host, devices)
    found += gpus_only_in_nvml(nvml, {gpu.pci.address for gpu in found})
    cpu_model, cpu_count = system.parse_cpuinfo(host.read_text("/proc/cpuinfo") or "")
    hardware = Hardware(
        gpus=tuple(found),
        nvswitches=tuple(switches),
        infiniband=tuple(d for d in devices if d.class_code.startswith(pci.CLASS_INFINIBAND)),
        cpu_model=cpu_model,
        cpu_count=cpu_count,
        memory_mib=system.parse_meminfo_mib(host.read_text("/proc/meminfo") or ""),
        disks=system.read_disks(host),
        free_space=system.read_free_space(host),
        nics=system.read_nics(host),
        pci_visible=pci.bus_visible(host),
    )
    return hardware, pci_ids_version


def probes(host: Host) -> tuple[tuple[str, ...], ...]:
    """The commands every detection asks, whatever the machine: started together."""
    return (
        system.df_command(host),
        config.SERVICES_COMMAND,
        platform.UNAME_COMMAND,
        platform.CONTAINER_COMMAND,
        platform.VM_COMMAND,
        platform.CLOUD_INIT_COMMAND,
        kernel.SECURE_BOOT_COMMAND,
    )


def detect_host(host: Host) -> HostFacts:
    """Gather every fact gpuwizard uses. Never raises for a missing file or tool."""
    with host.probing(probes(host)) as probed:
        return _detect(probed)


def _detect(host: Host) -> HostFacts:
    os = os_release.read_os(host)
    family = os_family(os)
    dpkg = read_dpkg(host) if family == "debian" else None  # read once: packages, holds, audit
    boot = detect_boot(host, dpkg)
    hardware, pci_ids_version = detect_hardware(host, boot.nvml)
    # Asking apt which headers it offers costs half a second: only where there is a GPU to drive.
    installed, python = installs.read_installs(host, family, dpkg, boot, bool(hardware.gpus))
    machine_id = (host.read_text("/etc/machine-id") or "").strip() or None
    return HostFacts(
        schema=SCHEMA,
        machine_id=machine_id,
        os=os,
        platform=platform.read_platform(host, boot.kernel),
        hardware=hardware,
        boot=boot,
        installs=installed,
        python=python,
        pci_ids_version=pci_ids_version,
    )
