"""HostFacts: everything gpuwizard knows about a machine, as frozen data.

Facts are gathered by ``wizard/machine/detect/`` and consumed by the recommender, the steps and the
screens. They round-trip through JSON (``gpuwizard detect --json``, ``recommend --facts F``) so a
bug report can be replayed. Versions are always strings ("12.10" is not 12.1). Per-machine facts
(machine-id, hardware, OS) are kept apart from per-boot ones (``Boot``: boot_id, kernel, loaded
modules, NVML), which must never be carried across a reboot. Nothing here reads the machine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from gpuwizard.core.codec import CodecError, from_jsonable, to_jsonable
from gpuwizard.core.gpus import GpuModel
from gpuwizard.core.torch_envs import TorchEnv

SCHEMA = 1

SecureBootState = Literal["enabled", "disabled", "unsupported", "unknown"]
CloudInitState = Literal["running", "done", "degraded", "error", "disabled", "absent", "unknown"]
NicKind = Literal["ethernet", "infiniband", "other"]
FabricState = Literal["not-started", "in-progress", "completed"]


@dataclass(frozen=True)
class PcieLink:
    """A PCIe link's trained and maximum speed and width, as sysfs reports them."""

    speed_current: str | None
    """As sysfs prints it, e.g. "16.0 GT/s PCIe"."""
    speed_max: str | None
    width_current: int | None
    width_max: int | None

    @property
    def is_degraded(self) -> bool:
        """True when the link trained below what both ends support (a reseat or riser problem)."""
        if self.width_current and self.width_max and self.width_current < self.width_max:
            return True
        return bool(
            self.speed_current
            and self.speed_max
            and _gts(self.speed_current) < _gts(self.speed_max)
        )


def _gts(speed: str) -> float:
    try:
        return float(speed.split()[0])
    except (ValueError, IndexError):
        return 0.0


@dataclass(frozen=True)
class PciDevice:
    """One PCI function, as sysfs describes it under /sys/bus/pci/devices."""

    address: str
    """Domain:bus:device.function, e.g. "0000:1b:00.0"."""
    vendor_id: str
    """Four lowercase hex digits, e.g. "10de"."""
    device_id: str
    class_code: str
    """Six hex digits: "030200" is a 3D controller, "068000" a bridge (NVSwitch)."""
    subsystem_vendor_id: str | None = None
    subsystem_device_id: str | None = None
    driver: str | None = None
    """The kernel driver bound to the device ("nouveau", "nvidia"), or None."""
    numa_node: int | None = None
    link: PcieLink | None = None


@dataclass(frozen=True)
class Gpu:
    """An NVIDIA GPU: its PCI function, and the catalogue's model for its device id."""

    pci: PciDevice
    model: GpuModel


@dataclass(frozen=True)
class NvmlGpu:
    """One GPU as its driver reports it through NVML (once a driver is loaded)."""

    index: int
    pci_bus_id: str
    """Normalised to sysfs form, "0000:1b:00.0"."""
    name: str
    memory_total_mib: int
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    persistence_mode: bool | None = None
    clock_limits: tuple[str, ...] = ()
    """Why the clocks are held down right now ("power cap", "thermal"...); idle is not listed."""
    clocks_event_mask: int | None = None
    """NVML's clocks event reasons as read (0x1 idle, 0x4 power cap, 0x8 hardware slowdown, 0x20
    and 0x40 thermal, 0x80 power brake); None when they could not be read."""
    power_w: float | None = None
    power_limit_w: float | None = None
    temperature_c: int | None = None
    sm_clock_mhz: int | None = None
    sm_clock_max_mhz: int | None = None
    ecc_enabled: bool | None = None
    """ECC mode now; None where the GPU has no ECC (GeForce) or the driver does not say."""
    ecc_uncorrected_volatile: int | None = None
    """Uncorrectable ECC errors since the driver last loaded (or the GPU was reset)."""
    ecc_uncorrected_aggregate: int | None = None
    """Uncorrectable ECC errors over the GPU's life."""
    retired_pages_pending: bool | None = None
    """Pre-Ampere page retirement waiting for a reset or reboot to take effect."""
    remapped_rows_correctable: int | None = None
    """Ampere and newer: rows remapped after correctable errors."""
    remapped_rows_uncorrectable: int | None = None
    remap_pending: bool | None = None
    """A row remap waits for a GPU reset or reboot."""
    remap_failed: bool | None = None
    """A remap failed: the memory cannot repair itself any more."""
    retired_pages_sbe: int | None = None
    """Pre-Ampere: pages retired after multiple single-bit ECC errors."""
    retired_pages_dbe: int | None = None
    """Pre-Ampere: pages retired after a double-bit ECC error."""
    fabric_state: FabricState | None = None
    """NVSwitch systems: how far the fabric manager got in joining this GPU to the NVLink fabric
    (nvmlDeviceGetGpuFabricInfo); None where the GPU or driver has no fabric."""
    fabric_error: str | None = None
    """The fabric registration's failure, as NVML names it; None when it succeeded or is unknown."""


@dataclass(frozen=True)
class NvmlOk:
    """NVML answered: the driver's versions and its GPUs."""

    KIND: ClassVar[str] = "ok"
    driver_version: str
    """e.g. "570.133.20"."""
    cuda_driver_version: str
    """The newest CUDA the driver supports, e.g. "12.8"."""
    gpus: tuple[NvmlGpu, ...] = ()
    p2p_unavailable: tuple[str, ...] = ()
    """GPU pairs without peer-to-peer reads, as "0-1": their traffic goes through host memory."""


@dataclass(frozen=True)
class NvmlUnavailable:
    """NVML could not be asked (no driver, no library, a mismatch), and why."""

    KIND: ClassVar[str] = "unavailable"
    reason: str
    """In the user's words: "no NVIDIA driver is installed (libnvidia-ml.so.1 not found)"."""


Nvml = NvmlOk | NvmlUnavailable


@dataclass(frozen=True)
class OsInfo:
    """The fields of /etc/os-release that name the distribution and its release."""

    id: str
    version_id: str
    id_like: tuple[str, ...] = ()
    pretty_name: str = ""
    version_codename: str | None = None


@dataclass(frozen=True)
class Platform:
    """What the OS runs on: the architecture, and any hypervisor, container or WSL."""

    arch: str
    """As ``uname -m`` prints it: "x86_64" or "aarch64"."""
    virtualization: str | None = None
    """The hypervisor ("kvm", "amazon", "microsoft"), or None on bare metal."""
    container: str | None = None
    """The container runtime ("docker", "lxc"), or None."""
    wsl: bool = False
    systemd: bool | None = None
    """systemd runs this machine (/run/systemd/system exists, as sd_booted(3) asks); None: not
    read (facts from before gpuwizard asked). Without it the runner starts as a detached
    process, not a transient systemd unit."""

    @property
    def virtual_machine(self) -> bool:
        """A hypervisor is underneath ("unknown" when one is but it does not say which)."""
        return self.virtualization is not None


DiskKind = Literal["nvme", "ssd", "hdd", "virtual", "unknown"]


@dataclass(frozen=True)
class Disk:
    """A whole disk (loop, RAM, device-mapper, RAID, network and optical devices left out)."""

    name: str
    size_bytes: int
    rotational: bool
    """As the kernel says (queue/rotational): virtio, Xen and many cloud disks say 1 whatever
    is behind them, so this alone is no evidence of a spinning disk."""
    nvme: bool
    model: str | None = None
    """Vendor and model as the device reports them ("ATA ST4000DM004-2U91", "QEMU HARDDISK",
    "Amazon Elastic Block Store"); None when the device says nothing."""
    virtual: bool = False
    """A hypervisor's or cloud's block device (virtio, Xen, Hyper-V, VMware, QEMU, EBS,
    Persistent Disk): what is behind it, and its speed, are the host's."""

    @property
    def kind(self) -> DiskKind:
        """What the evidence says: a virtual disk is never called an HDD; a rotational flag
        without a real device's model behind it is unknown."""
        if self.virtual:
            return "virtual"
        if self.nvme:
            return "nvme"
        if not self.rotational:
            return "ssd"
        return "hdd" if self.model else "unknown"


@dataclass(frozen=True)
class FreeSpace:
    """The free bytes of the file system that holds ``path``, as df reports them."""

    path: str
    free_bytes: int


def mount_holding(path: str, rows: tuple[FreeSpace, ...]) -> FreeSpace | None:
    """The file system (of those df reported) that holds ``path``: the longest mount point that
    is a prefix of it."""
    holding = [
        row for row in rows if path == row.path or path.startswith(row.path.rstrip("/") + "/")
    ]
    return max(holding, key=lambda row: len(row.path), default=None)


@dataclass(frozen=True)
class Nic:
    """A network interface, what kind it is and its link speed."""

    name: str
    kind: NicKind
    speed_mbps: int | None
    """None when the link is down or the driver does not report a speed."""


@dataclass(frozen=True)
class Hardware:
    """What the machine is built of: GPUs, NVSwitches, InfiniBand, CPU, memory, disks, NICs."""

    gpus: tuple[Gpu, ...] = ()
    nvswitches: tuple[PciDevice, ...] = ()
    infiniband: tuple[PciDevice, ...] = ()
    cpu_model: str | None = None
    cpu_count: int = 0
    memory_mib: int = 0
    disks: tuple[Disk, ...] = ()
    free_space: tuple[FreeSpace, ...] = ()
    nics: tuple[Nic, ...] = ()
    pci_visible: bool = True
    """Whether /sys/bus/pci/devices showed any device. False where /sys could not be read (a
    chroot, a locked-down container): there "no GPU" means "could not look", not "none"."""


def no_gpu_in_words(hardware: Hardware) -> str:
    """Why no GPU is listed, for people: none on the PCI bus, or /sys could not be read to look."""
    if hardware.pci_visible:
        return "no NVIDIA GPU found"
    return (
        "unknown: /sys could not be read (no PCI device under /sys/bus/pci: a chroot or a "
        "locked-down container?)"
    )


BootSignal = Literal["boot_id", "btime", "person"]
"""What told one boot from another: the kernel's boot_id, else /proc/stat's btime, else (neither
readable) the person's answer to "did this machine restart?" (issue 14)."""
BTIME_SLACK_S = 5
"""btime is the wall clock minus the uptime, in whole seconds: it moves a little when the clock
is stepped (NTP at start-up). A boot that began within this of the other one is the same boot."""


@dataclass(frozen=True)
class BootMark:
    """What identifies one boot: the boot_id, and /proc/stat's btime for when the boot_id cannot
    be read (a container without /proc/sys/kernel/random/boot_id, a permission error)."""

    boot_id: str | None
    btime: int | None = None
    """When this boot began, seconds since the epoch; None when /proc/stat cannot be read."""

    @property
    def signal(self) -> BootSignal | None:
        """The signal this mark can be judged by (the boot_id first); None: neither."""
        if self.boot_id is not None:
            return "boot_id"
        return "btime" if self.btime is not None else None


@dataclass(frozen=True)
class BootJudgement:
    """Whether two boot marks are one boot, and which signal said so."""

    same: bool | None
    """True: the same boot; False: the machine rebooted in between; None: cannot judge."""
    signal: BootSignal | None
    """What was compared; None when nothing could be."""


def judge_boot(before: BootMark, now: BootMark) -> BootJudgement:
    """Same boot or not, by the boot_id when both have one, else by btime; never by a guess.

    A btime that moved back by more than the slack is a clock that was set back, not a boot
    that began earlier: that cannot be judged.
    """
    if before.boot_id is not None and now.boot_id is not None:
        return BootJudgement(before.boot_id == now.boot_id, "boot_id")
    if before.btime is None or now.btime is None:
        return BootJudgement(None, None)
    moved = now.btime - before.btime
    if abs(moved) <= BTIME_SLACK_S:
        return BootJudgement(True, "btime")
    return BootJudgement(False if moved > 0 else None, "btime")


@dataclass(frozen=True)
class Boot:
    """Facts that belong to one boot; re-detected after every reboot and before every step."""

    boot_id: str | None
    """/proc/sys/kernel/random/boot_id when it reads as a UUID; None when unreadable."""
    kernel: str
    installed_kernels: tuple[str, ...] = ()
    kernels_with_headers: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    """Loaded kernel modules that matter here (nvidia*, nouveau)."""
    nvidia_module_version: str | None = None
    secure_boot: SecureBootState = "unknown"
    cloud_init: CloudInitState = "absent"
    reboot_required: bool = False
    reboot_required_packages: tuple[str, ...] = ()
    dpkg_interrupted: bool = False
    nvml: Nvml = field(default_factory=lambda: NvmlUnavailable("not probed"))
    btime: int | None = None
    """/proc/stat's btime (when this boot began, seconds since the epoch); None when unreadable."""

    @property
    def mark(self) -> BootMark:
        return BootMark(self.boot_id, self.btime)

    @property
    def headers_present(self) -> bool:
        return self.kernel in self.kernels_with_headers

    @property
    def nouveau_loaded(self) -> bool:
        return "nouveau" in self.modules

    @property
    def nvidia_loaded(self) -> bool:
        return "nvidia" in self.modules


@dataclass(frozen=True)
class Package:
    """An installed package and its version."""

    name: str
    version: str


MokState = Literal["enrolled", "pending", "not-enrolled", "no-key", "unknown"]


@dataclass(frozen=True)
class AptSource:
    """One enabled ``deb`` entry of apt's sources (one-line ``.list`` or deb822 ``.sources``)."""

    uri: str
    suite: str
    components: tuple[str, ...] = ()


@dataclass(frozen=True)
class VerifyReport:
    """What the verify-torch step saw, read back from /var/lib/gpuwizard/verify.json."""

    env: str
    torch: str
    boot_id: str | None
    ok: bool
    devices: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    btime: int | None = None
    """The boot it ran in, by /proc/stat's btime: the boot_id's stand-in where that is unreadable."""

    @property
    def boot(self) -> BootMark:
        return BootMark(self.boot_id, self.btime)


@dataclass(frozen=True)
class Installs:
    """What is installed that matters to a GPU stack, and how the machine is configured."""

    packages: tuple[Package, ...] = ()
    """Installed packages in the GPU stack (nvidia*, cuda*, cudnn*, dkms, kernel headers)."""
    cuda_toolkits: tuple[str, ...] = ()
    """Versions found as /usr/local/cuda-X.Y."""
    runfile_driver: bool = False
    """Traces of NVIDIA's .run installer (nvidia-uninstall, nvidia-installer.log)."""
    conda_cudatoolkit: tuple[str, ...] = ()
    nvidia_smi: bool = False
    nouveau_blacklisted: bool = False
    """Some modprobe.d file says ``blacklist nouveau`` (it takes effect once in the initramfs)."""
    nvidia_module_kernels: tuple[str, ...] = ()
    """Kernels that have an nvidia.ko (built by DKMS or prebuilt) under /lib/modules."""
    repositories: tuple[str, ...] = ()
    """File names in /etc/apt/sources.list.d and /etc/yum.repos.d."""
    held_packages: tuple[str, ...] = ()
    services_enabled: tuple[str, ...] = ()
    """Which of the services gpuwizard manages are enabled."""
    managed_files: dict[str, str] = field(default_factory=dict)
    """Content of the configuration files gpuwizard writes, where they exist."""
    mok: MokState = "unknown"
    verification: VerifyReport | None = None
    apt_sources: tuple[AptSource, ...] = ()
    """Where apt installs from: enabled ``deb`` entries (Debian and Ubuntu only)."""
    archive_headers: tuple[str, ...] | None = None
    """Kernel header packages apt can install now, among those of the installed and running
    kernels and their flavour's metapackage (``linux-headers-cloud-amd64``); None when apt cannot
    tell (no package lists yet, or not apt)."""

    def has_package(self, prefix: str) -> bool:
        return any(p.name.startswith(prefix) for p in self.packages)

    def package_version(self, name: str) -> str | None:
        return next((p.version for p in self.packages if p.name == name), None)


@dataclass(frozen=True)
class Interpreter:
    """A Python interpreter found on the machine."""

    path: str
    version: str
    """Major.minor, e.g. "3.10"."""


@dataclass(frozen=True)
class Environment:
    """A Python environment gpuwizard manages (/opt/gpuwizard/envs/*, Miniforge envs)."""

    path: str
    kind: Literal["venv", "conda"]
    python: str | None
    """major.minor, from pyvenv.cfg or conda-meta; None when unreadable."""
    packages: dict[str, str] = field(default_factory=dict)
    """torch, torchvision, torchaudio -> installed version (with any +cuXYZ local tag)."""
    problem: str | None = None
    """Why the environment cannot be used as it is (no interpreter, no pip), or None."""


@dataclass(frozen=True)
class PythonEnv:
    """The machine's Pythons: gpuwizard's environments, interpreters, python3 and conda."""

    environments: tuple[Environment, ...] = ()
    interpreters: tuple[Interpreter, ...] = ()
    system_python: str | None = None
    """Version of /usr/bin/python3, if present."""
    conda: str | None = None
    """Path of a conda installation (Miniforge, Miniconda, Anaconda), if one exists."""
    torch_envs: tuple[TorchEnv, ...] = ()
    """PyTorch installs the person already has (not gpuwizard's own environments), in the order
    found: the session's python3 and active environment first, then the usual places."""


MAX_DIGITS = 40
"""No fact is a number longer than this (Python refuses to read one of 4,300 digits at all)."""


def _bounded_int(text: str) -> int:
    """A JSON integer of a facts file; a huge one is refused in one line, not a traceback."""
    digits = len(text.lstrip("-"))
    if digits > MAX_DIGITS:
        raise CodecError(f"a number with {digits} digits: no fact is that large")
    return int(text)


@dataclass(frozen=True)
class HostFacts:
    """Everything gpuwizard knows of a machine, as detection read it (its JSON is the contract)."""

    schema: int
    machine_id: str | None
    os: OsInfo | None
    platform: Platform
    hardware: Hardware
    boot: Boot
    installs: Installs = Installs()
    python: PythonEnv = PythonEnv()
    pci_ids_version: str = ""
    """Version of the pci.ids data the GPU names came from."""

    @property
    def nvidia_gpus(self) -> tuple[Gpu, ...]:
        return self.hardware.gpus

    def to_json(self) -> str:
        return json.dumps(to_jsonable(self), indent=2, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> HostFacts:
        """Parse facts JSON; a bare facts object or the ``detect --json`` envelope."""
        try:
            data = json.loads(text, parse_int=_bounded_int)
        except json.JSONDecodeError as error:
            raise CodecError(f"not JSON: {error.msg} at line {error.lineno}") from None
        except RecursionError:  # [[[[...]]]] thousands deep: no facts file nests like that
            raise CodecError("not facts JSON: nested too deeply") from None
        if isinstance(data, dict) and "facts" in data:
            data = data["facts"]
        if not isinstance(data, dict):
            raise CodecError(f"expected a JSON object of facts, got {type(data).__name__}")
        schema = data.get("schema")
        if isinstance(schema, int) and not isinstance(schema, bool) and schema > SCHEMA:
            raise CodecError(
                f"facts schema {schema} come from a newer gpuwizard (this one reads {SCHEMA}): upgrade"
            )
        if schema != SCHEMA:
            raise CodecError(f"$.schema: expected {SCHEMA}, got {schema!r}")
        return from_jsonable(cls, data)
