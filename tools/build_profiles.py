"""Write the built-in recorded hosts (wizard/sim/recorded-hosts/*) from the specs below.

Each profile is a recorded-host directory in the format ``gpuwizard capture-host`` writes, so
tests, ``--simulate`` and real captures share one reader (the hosts with PyTorch already
installed, one of them a real capture, are in preinstalled_profiles.py beside this script).
These nine were assembled by hand from real formats: os-release files as the distributions
ship them, sysfs attribute files as the kernel prints them ("0x10de\\n", "16.0 GT/s
PCIe\\n"), dpkg's status file, rpm / mokutil / cloud-init / df output as those tools print it,
and NVML values as nvidia-smi reports them on those GPUs and drivers. A real capture of one of
these machines should replace its spec.

Usage: python tools/build_profiles.py [--only NAME]   (rewrites the directories; review the diff)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from gpuwizard.core.codec import to_jsonable
from gpuwizard.core.facts import NvmlGpu, NvmlOk, NvmlUnavailable
from gpuwizard.core.paths import MANAGED_SERVICES
from gpuwizard.machine import dpkgdb
from gpuwizard.machine.detect.apt_sources import header_packages
from gpuwizard.machine.detect.installs import PACKAGE_PATTERNS, RPM_QUERY
from gpuwizard.machine.detect.recording import command_key
from gpuwizard.machine.detect.system import FREE_SPACE_PATHS

PROFILES = Path(__file__).resolve().parent.parent / "wizard" / "sim" / "recorded-hosts"

OS_RELEASE = {
    "ubuntu20.04": """NAME="Ubuntu"
VERSION="20.04.6 LTS (Focal Fossa)"
ID=ubuntu
ID_LIKE=debian
PRETTY_NAME="Ubuntu 20.04.6 LTS"
VERSION_ID="20.04"
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
VERSION_CODENAME=focal
UBUNTU_CODENAME=focal
""",
    "ubuntu22.04": """PRETTY_NAME="Ubuntu 22.04.5 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.5 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=jammy
""",
    "ubuntu24.04": """PRETTY_NAME="Ubuntu 24.04.3 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04.3 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=noble
LOGO=ubuntu-logo
""",
    "debian12": """PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
VERSION_CODENAME=bookworm
ID=debian
HOME_URL="https://www.debian.org/"
SUPPORT_URL="https://www.debian.org/support"
BUG_REPORT_URL="https://bugs.debian.org/"
""",
    "rocky9": """NAME="Rocky Linux"
VERSION="9.6 (Blue Onyx)"
ID="rocky"
ID_LIKE="rhel centos fedora"
VERSION_ID="9.6"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Rocky Linux 9.6 (Blue Onyx)"
ANSI_COLOR="0;32"
LOGO="fedora-logo-icon"
CPE_NAME="cpe:/o:rocky:rocky:9::baseos"
HOME_URL="https://rockylinux.org/"
VENDOR_NAME="RESF"
VENDOR_URL="https://resf.org/"
BUG_REPORT_URL="https://bugs.rockylinux.org/"
SUPPORT_END="2032-05-31"
ROCKY_SUPPORT_PRODUCT="Rocky-Linux-9"
ROCKY_SUPPORT_PRODUCT_VERSION="9.6"
REDHAT_SUPPORT_PRODUCT="Rocky Linux"
REDHAT_SUPPORT_PRODUCT_VERSION="9.6"
""",
}

# `systemd-detect-virt` exits 1 and prints "none" where there is nothing to detect.
NONE = (1, "none\n")
MOKUTIL_NO_EFI = (255, "", "EFI variables are not supported on this system\n")
SPEED = {"gen3": "8.0 GT/s PCIe", "gen4": "16.0 GT/s PCIe", "gen5": "32.0 GT/s PCIe"}

# The hexadecimal module load addresses in /proc/modules are zeroed for unprivileged readers.
_MODULE_LINES = {
    "nouveau": "nouveau 2793472 0 - Live 0x0000000000000000",
    "nvidia": "nvidia 54546432 8 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)",
    "nvidia_uvm": "nvidia_uvm 4923392 0 - Live 0x0000000000000000 (POE)",
    "nvidia_modeset": "nvidia_modeset 1552384 0 - Live 0x0000000000000000 (POE)",
    "nvidia_drm": "nvidia_drm 122880 0 - Live 0x0000000000000000 (POE)",
    "ib_core": "ib_core 491520 8 rdma_cm,ib_uverbs,mlx5_ib, Live 0x0000000000000000",
    "mlx5_core": "mlx5_core 2502656 1 mlx5_ib, Live 0x0000000000000000",
}
_BASE_MODULES = (
    "tls 155648 0 - Live 0x0000000000000000\n"
    "nft_chain_nat 12288 1 - Live 0x0000000000000000\n"
    "xt_conntrack 12288 1 - Live 0x0000000000000000\n"
    "drm_kms_helper 270336 1 - Live 0x0000000000000000\n"
    "drm 774144 3 drm_kms_helper, Live 0x0000000000000000\n"
)


@dataclass(frozen=True)
class Pci:
    address: str
    vendor: str
    device: str
    class_code: str
    subsystem: tuple[str, str] = ("0000", "0000")
    driver: str | None = None
    numa: int = -1
    link: tuple[str, str, int, int] | None = None
    """(current speed, max speed, current width, max width)."""


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    notes: str
    os: str
    kernel: str
    arch: str = "x86_64"
    kernels: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    pci: tuple[Pci, ...] = ()
    modules: tuple[str, ...] = ()
    cpu: tuple[str, int] = ("Intel(R) Xeon(R) Platinum 8480+", 112)
    memory_kib: int = 2_113_470_464
    disks: tuple[tuple[str, int, bool], ...] = (("nvme0n1", 3_840_000_000_000, False),)
    nics: tuple[tuple[str, str, int | None, bool], ...] = (("eth0", "1", 100000, True),)
    """(name, ARPHRD type, speed Mb/s, physical)."""
    free_bytes: int = 800_000_000_000
    secure_boot: tuple[int, str] | tuple[int, str, str] = (0, "SecureBoot disabled\n")
    virt: tuple[tuple[int, str], tuple[int, str]] = (NONE, NONE)
    """(--vm answer, --container answer)."""
    cloud_init: tuple[int, str] = (0, "status: done\n")
    packages: tuple[tuple[str, str], ...] = ()
    services: dict[str, str] = field(default_factory=lambda: {"docker": "not-found"})
    """systemctl is-enabled answers; units not named are "not-found"; empty dict: no systemctl."""
    nvml: NvmlOk | NvmlUnavailable | None = None
    python: tuple[str, ...] = ("3.10",)
    files: dict[str, str] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    boot_id: str = "6f0c6c2e-3c51-4a0a-9d0e-2b7a1f9e4c11"
    machine_id: str = "3d1f0a8c2b7e4f19a6c5d2e8b1f04a7c"
    kernel_log: tuple[str, ...] = ()
    """Messages after the boot banner (nouveau, NVRM, Xid ...), as dmesg prints them."""
    extra_commands: dict[str, tuple[int, str]] = field(default_factory=dict)
    """More recorded commands (key: the shell-joined argv), for what only the doctor asks."""
    apt_policy: str | None = None
    """``apt-cache policy`` of the kernel header packages as recorded on the machine; None:
    every one of them has a candidate (an up-to-date archive), in apt's format."""
    systemd: bool | None = None
    """systemd runs the machine (/run/systemd/system); None: where systemctl answers."""
    disk_models: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Disk name -> (vendor, model) as sysfs reports them (NVMe: no vendor file, "")."""
    environ: dict[str, str] = field(default_factory=dict)
    """The session's PATH, VIRTUAL_ENV, CONDA_PREFIX, HOME, SUDO_USER (environ.json)."""


def gpu_pci(
    addresses: list[str],
    device: str,
    subsystem: str,
    driver: str | None,
    link: tuple[str, str, int, int],
    numa: tuple[int, ...] = (0,),
) -> tuple[Pci, ...]:
    return tuple(
        Pci(
            a,
            "10de",
            device,
            "030200",
            ("10de", subsystem),
            driver,
            numa[i * len(numa) // len(addresses)],
            link,
        )
        for i, a in enumerate(addresses)
    )


def dpkg_status(packages: tuple[tuple[str, str], ...]) -> str:
    """/var/lib/dpkg/status holding these packages, installed (a recording keeps only the
    stanzas detection reads, as capture-host does)."""
    return dpkgdb.render(dpkgdb.Entry(n, v, "install", "ok", "installed") for n, v in packages)


def write_file(root: Path, absolute: str, content: str | bytes) -> None:
    target = root / absolute.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content, encoding="utf-8")


def sysfs_pci(root: Path, links: dict[str, str], device: Pci) -> None:
    base = f"/sys/bus/pci/devices/{device.address}"
    write_file(root, f"{base}/vendor", f"0x{device.vendor}\n")
    write_file(root, f"{base}/device", f"0x{device.device}\n")
    write_file(root, f"{base}/class", f"0x{device.class_code}\n")
    write_file(root, f"{base}/subsystem_vendor", f"0x{device.subsystem[0]}\n")
    write_file(root, f"{base}/subsystem_device", f"0x{device.subsystem[1]}\n")
    write_file(root, f"{base}/numa_node", f"{device.numa}\n")
    if device.link:
        current, maximum, width, max_width = device.link
        write_file(root, f"{base}/current_link_speed", f"{current}\n")
        write_file(root, f"{base}/max_link_speed", f"{maximum}\n")
        write_file(root, f"{base}/current_link_width", f"{width}\n")
        write_file(root, f"{base}/max_link_width", f"{max_width}\n")
    if device.driver:
        links[f"{base}/driver"] = f"../../../bus/pci/drivers/{device.driver}"


def df_output(profile: Profile) -> str:
    lines = ["Filesystem         1-blocks         Used    Available Capacity Mounted on"]
    for path in FREE_SPACE_PATHS:
        lines.append(f"/dev/root    1967317549056 164000000000 {profile.free_bytes:>12} 9% {path}")
    return "\n".join(lines) + "\n"


def dmesg(profile: Profile) -> str:
    """The start of a boot's kernel log as dmesg prints it, then the profile's own messages."""
    banner = (
        f"[    0.000000] Linux version {profile.kernel} (builder@buildhost) (gcc version 12.3.0 "
        "(GCC), GNU ld version 2.38) #1 SMP PREEMPT_DYNAMIC\n"
        f"[    0.000000] Command line: BOOT_IMAGE=/boot/vmlinuz-{profile.kernel} "
        "root=UUID=0b6f1c1e-7f0a-4b8e-9a55-2f3c2d1e4a90 ro console=tty1 console=ttyS0\n"
        "[    0.000000] KERNEL supported cpus:\n"
        "[    0.000000]   Intel GenuineIntel\n"
        "[    0.000000]   AMD AuthenticAMD\n"
        "[    1.208311] PCI: Using configuration type 1 for base access\n"
        "[    2.913457] systemd[1]: Detected architecture x86-64.\n"
    )
    return banner + "".join(f"{line}\n" for line in profile.kernel_log)


def nouveau_log(addresses: list[str], chipset: str, bound: bool) -> tuple[str, ...]:
    """What nouveau prints for GPUs it drives, or gives up on (a chipset it does not know)."""
    if not bound:
        return tuple(
            f"[    3.{514223 + i:06d}] nouveau {a}: unknown chipset ({chipset})"
            for i, a in enumerate(addresses)
        )
    return tuple(
        line
        for i, a in enumerate(addresses)
        for line in (
            f"[    3.{514223 + i:06d}] nouveau {a}: enabling device (0000 -> 0002)",
            f"[    3.{520117 + i:06d}] nouveau {a}: NVIDIA {chipset}",
        )
    )


def nvrm_log(version: str, open_modules: bool) -> tuple[str, ...]:
    flavour = "Open Kernel Module for x86_64" if open_modules else "x86_64 Kernel Module"
    return (
        "[    5.012230] nvidia: loading out-of-tree module taints kernel.",
        "[    5.044188] nvidia-nvlink: Nvlink Core is being initialized, major device number 509",
        f"[    5.101293] NVRM: loading NVIDIA UNIX {flavour}  {version}  Release Build  "
        "(dvs-builder@U16-I3-B03-4-3)  Fri Mar 14 19:27:13 UTC 2025",
        "[    5.873044] nvidia_uvm: module uses symbols nvUvmInterfaceDisableAccessCntr from "
        "proprietary module nvidia, inheriting taint.",
    )


def dev_nodes(gpus: int) -> dict[str, str]:
    """/dev/nvidia* as the driver creates them (recorded as empty files)."""
    names = ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"]
    return {f"/dev/{name}": "" for name in names + [f"nvidia{i}" for i in range(gpus)]}


def infiniband(devices: int, state: str, rate: str) -> dict[str, str]:
    """/sys/class/infiniband/<hca>/ports/1: what NCCL looks at to pick its HCAs."""
    files = {}
    for i in range(devices):
        base = f"/sys/class/infiniband/mlx5_{i}/ports/1"
        files |= {f"{base}/state": f"{state}\n", f"{base}/rate": f"{rate}\n",
                  f"{base}/link_layer": "InfiniBand\n"}  # fmt: skip
    return files


def apt_policy(profile: Profile, names: tuple[str, ...]) -> str:
    """What ``apt-cache policy`` prints when each of these packages has a candidate."""
    installed = dict(profile.packages)
    codename = re.search(r"^VERSION_CODENAME=(\S+)", OS_RELEASE[profile.os], re.MULTILINE)
    codename = codename.group(1) if codename else "stable"
    mirror = (
        "http://archive.ubuntu.com/ubuntu"
        if profile.os.startswith("ubuntu")
        else "http://deb.debian.org/debian"
    )
    blocks = []
    for name in names:
        version = installed.get(name) or re.sub(
            r"^linux-headers-(\d+\.\d+\.\d+)-(\d+).*", r"\1-\2.1", name
        )
        if not version[0].isdigit():
            version = "1.0"
        blocks.append(
            f"{name}:\n  Installed: {installed.get(name, '(none)')}\n  Candidate: {version}\n"
            f"  Version table:\n     {version} 500\n        500 {mirror} {codename}-updates/main amd64 Packages\n"
        )
    return "".join(blocks)


def header_query(profile: Profile) -> tuple[str, ...]:
    kernels = tuple(dict.fromkeys([*(profile.kernels or (profile.kernel,)), profile.kernel]))
    return header_packages(kernels)


def commands(profile: Profile) -> dict[str, dict[str, object]]:
    family = "rhel" if profile.os.startswith("rocky") else "debian"
    out: dict[str, tuple[int, str] | tuple[int, str, str]] = {
        command_key(["uname", "-m"]): (0, f"{profile.arch}\n"),
        command_key(["mokutil", "--sb-state"]): profile.secure_boot,
        command_key(["systemd-detect-virt", "--vm"]): profile.virt[0],
        command_key(["systemd-detect-virt", "--container"]): profile.virt[1],
        command_key(["cloud-init", "status"]): profile.cloud_init,
        command_key(["df", "-P", "-B1", *FREE_SPACE_PATHS]): (0, df_output(profile)),
    }
    out[command_key(["dmesg"])] = (0, dmesg(profile))
    out.update(profile.extra_commands)
    if profile.services:
        states = [profile.services.get(unit, "not-found") for unit in MANAGED_SERVICES]
        code = 0 if all(s == "enabled" for s in states) else 1
        out[command_key(["systemctl", "is-enabled", *MANAGED_SERVICES])] = (
            code,
            "\n".join(states) + "\n",
        )
    else:
        out[command_key(["systemctl", "is-enabled", *MANAGED_SERVICES])] = (127, "")
    if family == "debian":
        names = header_query(profile)
        policy = (
            profile.apt_policy if profile.apt_policy is not None else apt_policy(profile, names)
        )
        out[command_key(["apt-cache", "policy", *names])] = (0, policy)
    else:
        listing = "".join(f"{n}\t{v}\tii \n" for n, v in profile.packages)
        out[command_key([*RPM_QUERY, *PACKAGE_PATTERNS])] = (0, listing)
    return {
        key: {"returncode": v[0], "stdout": v[1], "stderr": v[2] if len(v) > 2 else ""}
        for key, v in sorted(out.items())
    }


def write_proc(root: Path, profile: Profile) -> None:
    write_file(root, "/etc/os-release", OS_RELEASE[profile.os])
    write_file(root, "/etc/machine-id", profile.machine_id + "\n")
    write_file(root, "/proc/sys/kernel/osrelease", profile.kernel + "\n")
    write_file(root, "/proc/sys/kernel/random/boot_id", profile.boot_id + "\n")
    modules = _BASE_MODULES + "".join(_MODULE_LINES[m] + "\n" for m in profile.modules)
    write_file(root, "/proc/modules", modules)
    cpu_model, cpu_count = profile.cpu
    cpuinfo = "".join(
        f"processor\t: {i}\nvendor_id\t: GenuineIntel\nmodel name\t: {cpu_model}\n\n"
        for i in range(cpu_count)
    )
    write_file(root, "/proc/cpuinfo", cpuinfo)
    free = profile.memory_kib - 9_000_000
    meminfo = f"MemTotal:       {profile.memory_kib} kB\nMemFree:        {free} kB\n"
    write_file(root, "/proc/meminfo", meminfo)


def write_sys(root: Path, profile: Profile, links: dict[str, str]) -> None:
    for device in profile.pci:
        sysfs_pci(root, links, device)
    for name, size, rotational in profile.disks:
        write_file(root, f"/sys/block/{name}/size", f"{size // 512}\n")
        write_file(root, f"/sys/block/{name}/queue/rotational", "1\n" if rotational else "0\n")
        vendor, model = profile.disk_models.get(name, ("", ""))
        if vendor:  # SCSI pads both to 8 and 16 characters
            write_file(root, f"/sys/block/{name}/device/vendor", f"{vendor:<8}\n")
        if model:
            write_file(root, f"/sys/block/{name}/device/model", f"{model:<16}\n")
    for name, arphrd, speed, physical in profile.nics:
        write_file(root, f"/sys/class/net/{name}/type", f"{arphrd}\n")
        write_file(root, f"/sys/class/net/{name}/speed", f"{speed if speed else -1}\n")
        if physical:
            links[f"/sys/class/net/{name}/device"] = "../../../0000:00:03.0"
    write_file(root, "/sys/class/net/lo/type", "772\n")


def build(profile: Profile, destination: Path) -> None:
    if destination.exists():
        shutil.rmtree(destination)
    root = destination / "root"
    links = dict(profile.links)
    write_proc(root, profile)
    write_sys(root, profile, links)
    empty_dirs = [f"/lib/modules/{kernel}" for kernel in profile.kernels or (profile.kernel,)]
    empty_dirs += [p for p in FREE_SPACE_PATHS if p != "/"]
    for kernel in profile.headers:
        links[f"/lib/modules/{kernel}/build"] = f"/usr/src/linux-headers-{kernel}"
    if profile.systemd if profile.systemd is not None else bool(profile.services):
        empty_dirs.append("/run/systemd/system")
    for version in profile.python:
        write_file(root, f"/usr/bin/python{version}", "")
    if profile.python:
        links["/usr/bin/python3"] = f"python{profile.python[0]}"
    if not profile.os.startswith("rocky"):
        write_file(root, dpkgdb.STATUS, dpkg_status(profile.packages))
        empty_dirs.append(dpkgdb.UPDATES)
    for path, content in profile.files.items():
        write_file(root, path, content)
    _json(destination / "links.json", dict(sorted(links.items())))
    _json(destination / "empty_dirs.json", sorted(set(empty_dirs)))
    _json(destination / "commands.json", commands(profile))
    if profile.nvml is not None:
        _json(destination / "nvml.json", to_jsonable(profile.nvml))
    if profile.environ:
        _json(destination / "environ.json", dict(sorted(profile.environ.items())))
    meta = {"description": profile.description, "notes": profile.notes}
    _json(destination / "profile.json", meta)


def _json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def nvml_gpus(
    addresses: list[str],
    name: str,
    memory_mib: int,
    gen: tuple[int, int],
    width: tuple[int, int],
    persistence: bool,
) -> tuple[NvmlGpu, ...]:
    return tuple(
        NvmlGpu(i, a, name, memory_mib, gen[0], gen[1], width[0], width[1], persistence)
        for i, a in enumerate(addresses)
    )


# ------------------------------------------------------------------------------------------ specs
A100_ADDR = ["0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0"]
H100_ADDR = [f"0000:{b}:00.0" for b in ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")]
V100_ADDR = ["0000:00:04.0", "0000:00:05.0", "0000:00:06.0", "0000:00:07.0"]
L40S_ADDR = ["0000:17:00.0", "0000:31:00.0", "0000:b1:00.0", "0000:ca:00.0"]
H200_ADDR = ["0000:41:00.0", "0000:c1:00.0"]
ASPEED = Pci("0000:03:00.0", "1a03", "2000", "030000", ("15d9", "1c48"), "ast", 0)

# NVML's memory health on a data-centre GPU with nothing wrong: ECC on, no errors, no repairs.
# Clocks: idle (0x1) and nothing else, as nvidia-smi -q shows an idle healthy GPU.
HEALTHY_HBM = {
    "ecc_enabled": True, "ecc_uncorrected_volatile": 0, "ecc_uncorrected_aggregate": 0,
    "remapped_rows_correctable": 0, "remapped_rows_uncorrectable": 0,
    "remap_pending": False, "remap_failed": False, "clocks_event_mask": 0x1,
}  # fmt: skip
# Volta retires pages instead of remapping rows.
HEALTHY_HBM2_VOLTA = {
    "ecc_enabled": True, "ecc_uncorrected_volatile": 0, "ecc_uncorrected_aggregate": 0,
    "retired_pages_pending": False, "retired_pages_sbe": 0, "retired_pages_dbe": 0,
    "clocks_event_mask": 0x1,
}  # fmt: skip
A100_80_ADDR = [f"0000:{b}:00.0" for b in ("07", "0f", "47", "4e", "87", "90", "b7", "bd")]
NVCC_12_4 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2024 NVIDIA Corporation
Built on Thu_Mar_28_02:18:24_PDT_2024
Cuda compilation tools, release 12.4, V12.4.131
Build cuda_12.4.r12.4/compiler.34097967_0
"""
TORCH_VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'xpu']
__version__ = '{version}'
debug = False
cuda: Optional[str] = '{cuda}'
git_version = '5811a8d7da873dd699ff6687092c225caffcf1bb'
hip: Optional[str] = None
xpu: Optional[str] = None
"""


def metadata(name: str, version: str) -> str:
    return f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"


def neglected_a100() -> Profile:
    """A server that ran for months: an unattended kernel update without its module, a torch
    built for a newer CUDA than the driver, Xids, a pending row remap, a GPU off the bus, an
    x8 link and InfiniBand ports down. Every doctor check has something to say."""
    links = dict.fromkeys(A100_80_ADDR, (SPEED["gen4"], SPEED["gen4"], 16, 16))
    links["0000:47:00.0"] = (SPEED["gen4"], SPEED["gen4"], 8, 16)
    pci = tuple(
        Pci(a, "10de", "20b2", "030200", ("10de", "1463"), "nvidia", 0 if i < 4 else 1, links[a])
        for i, a in enumerate(A100_80_ADDR)
    ) + tuple(
        Pci(f"0000:{b}:00.0", "15b3", "101b", "020700", ("15b3", "0007"), "mlx5_core", i // 2)
        for i, b in enumerate(("0c", "4b", "8b", "ca"))
    )
    answering = [a for a in A100_80_ADDR if a != "0000:b7:00.0"]  # fell off the bus
    gpus = [
        dataclasses.replace(
            g,
            **HEALTHY_HBM,
            **({"pcie_width_current": 8} if g.pci_bus_id == "0000:47:00.0" else {}),
        )
        for g in nvml_gpus(answering, "NVIDIA A100-SXM4-80GB", 81920, (4, 4), (16, 16), False)
    ]
    gpus[4] = dataclasses.replace(  # 0000:90:00.0: the double-bit error and its pending repair
        gpus[4], ecc_uncorrected_volatile=1, ecc_uncorrected_aggregate=1,
        remapped_rows_uncorrectable=1, remap_pending=True,
    )  # fmt: skip
    env = "/opt/gpuwizard/envs/pytorch"
    site = f"{env}/lib/python3.10/site-packages"
    return Profile(
        name="a100x8-ubuntu2204-neglected",
        description="8x A100 SXM4 80GB, Ubuntu 22.04, driver 535 left running for months: the doctor's patient",
        notes="Unattended upgrades installed kernel 5.15.0-126 without headers, so no nvidia "
        "module waits for the next boot; someone pip-installed torch 2.14.1+cu130, which the "
        "R535 driver (CUDA 12.2) cannot run, next to a CUDA 12.4 toolkit. The kernel log has a "
        "double-bit ECC error with its pending row remap on 0000:90:00.0 and Xid 79 on "
        "0000:b7:00.0, which NVML no longer lists; one GPU trained at x8; persistence mode is "
        "off; the InfiniBand ports are down.",
        os="ubuntu22.04",
        kernel="5.15.0-119-generic",
        kernels=("5.15.0-119-generic", "5.15.0-126-generic"),
        headers=("5.15.0-119-generic",),
        pci=pci,
        modules=("nvidia", "nvidia_modeset", "nvidia_uvm", "ib_core", "mlx5_core"),
        cpu=("AMD EPYC 7763 64-Core Processor", 256),
        memory_kib=2_113_470_464,
        nics=(
            ("eno1", "1", 10000, True),
            ("eno2", "1", 10000, True),
            ("ibs1", "32", None, True),
            ("ibs2", "32", None, True),
        ),
        packages=(
            ("linux-headers-5.15.0-119-generic", "5.15.0-119.129"),
            ("linux-headers-generic", "5.15.0.126.125"),
            ("nvidia-driver-535-server", "535.216.01-0ubuntu0.22.04.1"),
            ("nvidia-dkms-535-server", "535.216.01-0ubuntu0.22.04.1"),
            ("nvidia-utils-535-server", "535.216.01-0ubuntu0.22.04.1"),
            ("libnvidia-compute-535-server", "535.216.01-0ubuntu0.22.04.1"),
            ("cuda-toolkit-12-4", "12.4.1-1"),
            ("dkms", "2.8.7-2ubuntu2.2"),
        ),
        nvml=NvmlOk("535.216.01", "12.2", tuple(gpus)),
        python=("3.10",),
        services={"nvidia-persistenced": "disabled"},
        kernel_log=(
            *nvrm_log("535.216.01", open_modules=False),
            "[86412.551210] NVRM: Xid (PCI:0000:90:00): 48, pid=41873, name=python, An "
            "uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer "
            "at partition 6, subpartition 0.",
            "[86412.551290] NVRM: Xid (PCI:0000:90:00): 63, pid='<unknown>', name=<unknown>, "
            "Row Remapper: New row marked for remapping, reset gpu to activate.",
            "[91877.004512] NVRM: Xid (PCI:0000:b7:00): 79, pid='<unknown>', name=<unknown>, "
            "GPU has fallen off the bus.",
            "[91877.004530] NVRM: GPU 0000:b7:00.0: GPU has fallen off the bus.",
        ),
        extra_commands={"/usr/local/cuda-12.4/bin/nvcc --version": (0, NVCC_12_4)},
        files={
            "/usr/bin/nvidia-smi": "",
            "/sys/module/nvidia/version": "535.216.01\n",
            "/lib/modules/5.15.0-119-generic/updates/dkms/nvidia.ko": "",
            "/usr/lib/modprobe.d/nvidia-kernel-common.conf": NVIDIA_MODPROBE,
            "/usr/local/cuda-12.4/bin/nvcc": "",
            "/run/reboot-required": "*** System restart required ***\n",
            "/run/reboot-required.pkgs": "linux-image-5.15.0-126-generic\n",
            f"{env}/pyvenv.cfg": "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.10.12\n",
            f"{env}/bin/python": "",
            f"{site}/torch/version.py": TORCH_VERSION_PY.format(
                version="2.14.1+cu130", cuda="13.0"
            ),
            f"{site}/torch-2.14.1+cu130.dist-info/METADATA": metadata("torch", "2.14.1+cu130"),
            f"{site}/torchvision-0.29.1+cu130.dist-info/METADATA": metadata(
                "torchvision", "0.29.1+cu130"
            ),
            f"{site}/pip-24.0.dist-info/METADATA": metadata("pip", "24.0"),
            **dev_nodes(8),
            **infiniband(4, "1: DOWN", "10 Gb/sec (4X SDR)"),
        },
        machine_id="8c7d2a1f9e3b4c5d6a7b8c9d0e1f2a3b",
        boot_id="2b8e4f6a-1c3d-4e5f-8a9b-0c1d2e3f4a5b",
    )


# What Ubuntu's nvidia-kernel-common-<branch> package ships, so nouveau stays away.
NVIDIA_MODPROBE = "blacklist nouveau\noptions nouveau modeset=0\n"

UBUNTU_2004_DEV = (("linux-headers-generic", "5.4.0.216.208"),)

# Read from a real Debian 12 root on 2026-12-03 (see the t4-debian12-fresh notes).
T4_KERNEL = "6.1.0-57-cloud-amd64"
T4_APT_POLICY = """linux-headers-6.1.0-57-cloud-amd64:
  Installed: (none)
  Candidate: 6.1.192-3
  Version table:
     6.1.192-3 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
linux-headers-cloud-amd64:
  Installed: (none)
  Candidate: 6.1.192-3
  Version table:
     6.1.192-3 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
     6.1.176-1 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
"""
DEBIAN12_MAIN_SOURCES = """deb http://deb.debian.org/debian bookworm main

deb http://deb.debian.org/debian bookworm-updates main

deb http://deb.debian.org/debian-security bookworm-security main
"""
NOUVEAU = "nouveau"

SPECS: tuple[Profile, ...] = (
    Profile(
        name="a100x4-ubuntu2004-fresh",
        description="4x A100 SXM4 40GB, Ubuntu 20.04, fresh: no driver, nouveau loaded",
        notes="A 2021-era cloud image as in the guide: nouveau bound, headers for the running "
        "kernel missing, Python 3.8, a kernel update waiting for a reboot.",
        os="ubuntu20.04",
        kernel="5.4.0-216-generic",
        kernels=("5.4.0-216-generic", "5.4.0-218-generic"),
        headers=("5.4.0-218-generic",),
        pci=gpu_pci(
            A100_ADDR, "20b0", "134f", NOUVEAU, (SPEED["gen4"], SPEED["gen4"], 16, 16), (0, 0, 1, 1)
        ),
        modules=("nouveau",),
        cpu=("AMD EPYC 7742 64-Core Processor", 128),
        memory_kib=528_209_920,
        disks=(("nvme0n1", 1_920_383_410_176, False), ("nvme1n1", 1_920_383_410_176, False)),
        nics=(("ens3", "1", 25000, True),),
        virt=((0, "kvm\n"), NONE),
        packages=(*UBUNTU_2004_DEV, ("linux-headers-5.4.0-218-generic", "5.4.0-218.238")),
        python=("3.8",),
        kernel_log=nouveau_log(A100_ADDR, "GA100 (170000a1)", bound=True),
        files={
            "/run/reboot-required": "*** System restart required ***\n",
            "/run/reboot-required.pkgs": "linux-image-5.4.0-218-generic\nlinux-base\n",
        },
    ),
    Profile(
        name="h100x8-ubuntu2204-fresh",
        description="8x H100 SXM5 80GB HGX with NVSwitch and 8x ConnectX-7, Ubuntu 22.04, fresh",
        notes="Bare-metal HGX H100 as delivered: four NVSwitches, InfiniBand NDR, no driver; "
        "nouveau is loaded but cannot drive Hopper, so no device is bound to it.",
        os="ubuntu22.04",
        kernel="5.15.0-126-generic",
        headers=("5.15.0-126-generic",),
        pci=gpu_pci(
            H100_ADDR,
            "2330",
            "16c1",
            None,
            (SPEED["gen5"], SPEED["gen5"], 16, 16),
            (0, 0, 0, 0, 1, 1, 1, 1),
        )
        + tuple(
            Pci(f"0000:0{i}:00.0", "10de", "22a3", "068000", ("10de", "1796"), None, 0)
            for i in (5, 6, 7, 8)
        )
        + tuple(
            Pci(
                f"0000:{b}:00.0",
                "15b3",
                "1021",
                "020700",
                ("15b3", "0041"),
                "mlx5_core",
                i // 4,
                (SPEED["gen5"], SPEED["gen5"], 16, 16),
            )
            for i, b in enumerate(("1a", "3c", "4d", "5e", "9c", "bc", "cc", "dc"))
        ),
        modules=("nouveau", "ib_core", "mlx5_core"),
        memory_kib=2_113_470_464,
        disks=(
            ("nvme0n1", 3_840_755_982_336, False),
            ("nvme1n1", 3_840_755_982_336, False),
            ("nvme2n1", 7_681_501_126_656, False),
        ),
        nics=(
            ("eno1", "1", 25000, True),
            ("ibp26s0", "32", 400000, True),
            ("ibp60s0", "32", 400000, True),
            ("docker0", "1", None, False),
        ),
        packages=(
            ("linux-headers-5.15.0-126-generic", "5.15.0-126.136"),
            ("linux-headers-generic", "5.15.0.126.125"),
        ),
        python=("3.10",),
        kernel_log=(
            *nouveau_log(H100_ADDR[:2], "180000a1", bound=False),
            "[    4.112907] mlx5_core 0000:1a:00.0: firmware version: 28.39.1002",
            "[    4.631550] mlx5_core 0000:1a:00.0: Port module event: module 0, Cable plugged",
            "[    5.204116] mlx5_ib: Mellanox Connect-IB Infiniband driver v5.0-0",
        ),
        files=infiniband(8, "4: ACTIVE", "400 Gb/sec (4X NDR)"),
    ),
    Profile(
        name="h200-ubuntu2404-driver570",
        description="2x H200 NVL, Ubuntu 24.04, driver 570.133.20 (open) already installed",
        notes="A workstation-class server someone set up earlier with Ubuntu's 570-server-open "
        "packages; persistence mode is off.",
        os="ubuntu24.04",
        kernel="6.8.0-60-generic",
        headers=("6.8.0-60-generic",),
        pci=gpu_pci(
            H200_ADDR, "233b", "1996", "nvidia", (SPEED["gen5"], SPEED["gen5"], 16, 16), (0, 1)
        ),
        modules=("nvidia", "nvidia_drm", "nvidia_modeset", "nvidia_uvm"),
        cpu=("AMD EPYC 9454 48-Core Processor", 96),
        memory_kib=792_466_432,
        nics=(("eno1np0", "1", 100000, True),),
        packages=(
            ("linux-headers-6.8.0-60-generic", "6.8.0-60.63"),
            ("nvidia-driver-570-server-open", "570.133.20-0ubuntu0.24.04.1"),
            ("nvidia-dkms-570-server-open", "570.133.20-0ubuntu0.24.04.1"),
            ("nvidia-utils-570-server", "570.133.20-0ubuntu0.24.04.1"),
            ("libnvidia-compute-570-server", "570.133.20-0ubuntu0.24.04.1"),
            ("dkms", "3.0.11-1ubuntu13"),
        ),
        nvml=NvmlOk(
            "570.133.20",
            "12.8",
            tuple(
                dataclasses.replace(g, **HEALTHY_HBM)
                for g in nvml_gpus(H200_ADDR, "NVIDIA H200 NVL", 143771, (5, 5), (16, 16), False)
            ),
        ),
        kernel_log=nvrm_log("570.133.20", open_modules=True),
        python=("3.12",),
        services={"nvidia-persistenced": "disabled"},
        files={
            "/usr/bin/nvidia-smi": "",
            "/sys/module/nvidia/version": "570.133.20\n",
            "/lib/modules/6.8.0-60-generic/updates/dkms/nvidia.ko.zst": "",
            "/usr/lib/modprobe.d/nvidia-kernel-common.conf": NVIDIA_MODPROBE,
            **dev_nodes(2),
        },
    ),
    Profile(
        name="v100x4-ubuntu2204-driver535",
        description="4x V100 SXM2 16GB, Ubuntu 22.04, driver 535.247.01 installed",
        notes="A cloud V100 instance with the 535-server driver from Ubuntu's archive. Volta "
        "needs the proprietary modules and cu126 wheels; R580 is its last branch.",
        os="ubuntu22.04",
        kernel="6.8.0-1029-aws",
        headers=("6.8.0-1029-aws",),
        pci=gpu_pci(V100_ADDR, "1db1", "1212", "nvidia", (SPEED["gen3"], SPEED["gen3"], 16, 16)),
        modules=("nvidia", "nvidia_modeset", "nvidia_uvm"),
        cpu=("Intel(R) Xeon(R) CPU E5-2686 v4 @ 2.30GHz", 32),
        memory_kib=251_658_240,
        disks=(("nvme0n1", 214_748_364_800, False),),
        nics=(("ens3", "1", 10000, True),),
        virt=((0, "amazon\n"), NONE),
        packages=(
            ("linux-headers-6.8.0-1029-aws", "6.8.0-1029.31~22.04.1"),
            ("nvidia-driver-535-server", "535.247.01-0ubuntu0.22.04.1"),
            ("nvidia-dkms-535-server", "535.247.01-0ubuntu0.22.04.1"),
            ("nvidia-utils-535-server", "535.247.01-0ubuntu0.22.04.1"),
            ("dkms", "2.8.7-2ubuntu2.2"),
        ),
        nvml=NvmlOk(
            "535.247.01",
            "12.2",
            tuple(
                dataclasses.replace(g, **HEALTHY_HBM2_VOLTA)
                for g in nvml_gpus(V100_ADDR, "Tesla V100-SXM2-16GB", 16384, (3, 3), (16, 16), True)
            ),
        ),
        kernel_log=nvrm_log("535.247.01", open_modules=False),
        python=("3.10",),
        services={"nvidia-persistenced": "enabled"},
        files={
            "/usr/bin/nvidia-smi": "",
            "/sys/module/nvidia/version": "535.247.01\n",
            "/lib/modules/6.8.0-1029-aws/updates/dkms/nvidia.ko": "",
            "/usr/lib/modprobe.d/nvidia-kernel-common.conf": NVIDIA_MODPROBE,
            **dev_nodes(4),
        },
        free_bytes=120_000_000_000,
    ),
    Profile(
        name="t4-debian12-fresh",
        description="1x T4, Debian 12 cloud image, fresh: no driver, no kernel headers",
        notes="A small GCE-style VM on Debian's cloud kernel, refreshed on 2026-12-03 from a real "
        "Debian 12 root (mmdebstrap bookworm + -updates + -security, main only, with "
        "linux-image-cloud-amd64): kernel 6.1.0-57-cloud-amd64, which is built without DRM, so "
        "no nouveau exists to hold the T4 and nothing is bound to it; python3.11 without "
        "python3.11-venv; apt's sources name main only; the headers of the running kernel are "
        "in the archive but not installed. Legacy BIOS boot, a small boot disk. Hardware and "
        "boot facts are the earlier hand-made ones.",
        os="debian12",
        kernel=T4_KERNEL,
        pci=gpu_pci(["0000:00:04.0"], "1eb8", "12a2", None, (SPEED["gen3"], SPEED["gen3"], 16, 16)),
        cpu=("Intel(R) Xeon(R) CPU @ 2.20GHz", 8),
        memory_kib=30_817_020,
        disks=(("sda", 107_374_182_400, False),),
        nics=(("ens4", "1", None, True),),
        virt=((0, "google\n"), NONE),
        secure_boot=MOKUTIL_NO_EFI,
        free_bytes=92_000_000_000,
        python=("3.11",),
        packages=(("python3.11", "3.11.2-6+deb12u9"),),
        apt_policy=T4_APT_POLICY,
        files={"/etc/apt/sources.list": DEBIAN12_MAIN_SOURCES},
    ),
    Profile(
        name="l40sx4-rocky9-fresh",
        description="4x L40S, Rocky Linux 9.6, fresh: no driver, nouveau loaded",
        notes="A 2U inference server with Rocky 9; kernel-devel for the running kernel is "
        "installed; Python 3.9 is the system interpreter.",
        os="rocky9",
        kernel="5.14.0-570.17.1.el9_6.x86_64",
        headers=("5.14.0-570.17.1.el9_6.x86_64",),
        pci=gpu_pci(
            L40S_ADDR, "26b9", "1851", NOUVEAU, (SPEED["gen4"], SPEED["gen4"], 16, 16), (0, 0, 1, 1)
        ),
        modules=("nouveau",),
        cpu=("Intel(R) Xeon(R) Gold 6448Y", 128),
        memory_kib=527_941_632,
        disks=(("nvme0n1", 1_920_383_410_176, False), ("sda", 8_001_563_222_016, True)),
        disk_models={"sda": ("SEAGATE", "ST8000NM017B")},
        nics=(("eno1", "1", 25000, True),),
        packages=(
            ("kernel-devel", "5.14.0-570.17.1.el9_6"),
            ("kernel-headers", "5.14.0-570.17.1.el9_6"),
        ),
        python=("3.9",),
        kernel_log=nouveau_log(L40S_ADDR, "AD102 (192000a1)", bound=True),
    ),
    Profile(
        name="rtx5090-ubuntu2404-secureboot",
        description="1x GeForce RTX 5090, Ubuntu 24.04 workstation, Secure Boot on, fresh",
        notes="A Blackwell desktop: open modules are required, Secure Boot is enabled so DKMS "
        "modules need MOK enrollment at the console; a spinning data disk and 1 GbE.",
        os="ubuntu24.04",
        kernel="6.14.0-29-generic",
        headers=("6.14.0-29-generic",),
        pci=(
            *gpu_pci(
                ["0000:01:00.0"], "2b85", "205f", None, (SPEED["gen5"], SPEED["gen5"], 16, 16)
            ),
            Pci("0000:01:00.1", "10de", "22e8", "040300", ("10de", "205f"), "snd_hda_intel", -1),
        ),
        modules=("nouveau",),
        cpu=("AMD Ryzen 9 9950X 16-Core Processor", 32),
        memory_kib=65_536_000,
        disks=(("nvme0n1", 2_000_398_934_016, False), ("sda", 4_000_787_030_016, True)),
        disk_models={
            "nvme0n1": ("", "Samsung SSD 990 PRO 2TB"),
            "sda": ("ATA", "ST4000DM004-2U91"),
        },
        nics=(("enp5s0", "1", 1000, True),),
        secure_boot=(0, "SecureBoot enabled\n"),
        cloud_init=(127, ""),
        packages=(("linux-headers-6.14.0-29-generic", "6.14.0-29.29~24.04.1"),),
        python=("3.12",),
        kernel_log=(
            "[    0.000000] secureboot: Secure boot enabled",
            "[    0.000000] Kernel is locked down from EFI Secure Boot mode; see man kernel_lockdown.7",
            *nouveau_log(["0000:01:00.0"], "1b2000a1", bound=False),
        ),
    ),
    Profile(
        name="nogpu-ubuntu2204",
        description="A server with no NVIDIA GPU (ASPEED BMC graphics only), Ubuntu 22.04",
        notes="What a CPU-only node looks like: the only display device is the BMC's.",
        os="ubuntu22.04",
        kernel="5.15.0-126-generic",
        headers=("5.15.0-126-generic",),
        pci=(ASPEED,),
        cpu=("Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", 64),
        memory_kib=263_921_664,
        python=("3.10",),
    ),
    Profile(
        name="wsl2-ubuntu2204-rtx4090",
        description="WSL2 Ubuntu 22.04 on a Windows PC with a GeForce RTX 4090",
        notes="The GPU is reached through /dev/dxg and the Windows driver (576.88, CUDA 12.9): "
        "no NVIDIA PCI device in sysfs, NVML from /usr/lib/wsl/lib. The driver must not be "
        "installed inside WSL.",
        os="ubuntu22.04",
        kernel="6.6.87.2-microsoft-standard-WSL2",
        cpu=("13th Gen Intel(R) Core(TM) i9-13900K", 32),
        memory_kib=32_827_064,
        disks=(("sda", 402_653_184_000, False), ("sdb", 1_099_511_627_776, False)),
        nics=(("eth0", "1", 10000, False),),
        virt=((0, "microsoft\n"), (0, "wsl\n")),
        services={},
        secure_boot=MOKUTIL_NO_EFI,
        cloud_init=(127, ""),
        nvml=NvmlOk(
            "576.88",
            "12.9",
            nvml_gpus(["0000:01:00.0"], "NVIDIA GeForce RTX 4090", 24564, (4, 4), (16, 16), True),
        ),
        python=("3.10",),
        files={"/usr/lib/wsl/lib/libnvidia-ml.so.1": "", "/usr/lib/wsl/lib/nvidia-smi": ""},
        apt_policy="",  # WSL's kernel comes from Microsoft: no headers package for it in the archive
    ),
)


SPECS = (*SPECS, neglected_a100())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="build just this profile")
    args = parser.parse_args(argv)
    import preinstalled_profiles as pre  # beside this script; it imports from this one

    for profile in (*SPECS, *pre.PROFILES):
        if args.only and profile.name != args.only:
            continue
        build(profile, PROFILES / profile.name)
        print(f"wrote {PROFILES / profile.name}")
    for overlay in pre.CAPTURED:
        if args.only and overlay.name != args.only:
            continue
        pre.build_from_capture(overlay, PROFILES / overlay.name)
        print(f"wrote {PROFILES / overlay.name} from the capture {overlay.capture}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
