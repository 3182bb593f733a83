"""PCI devices from sysfs: NVIDIA GPUs and NVSwitches, InfiniBand adapters. Works with no driver.

sysfs, not NVML or lspci, decides which GPUs exist: /sys/bus/pci/devices/*/{vendor,device,class}
are there from the first boot, before any driver is installed. Names come from the shipped
catalogue; a system pci.ids newer than the catalogue's supplies names the catalogue lacks.
"""

from __future__ import annotations

import re

from gpuwizard.core import gpus
from gpuwizard.core.facts import Gpu, PciDevice, PcieLink
from gpuwizard.machine.host import Host

DEVICES = "/sys/bus/pci/devices"
SYSTEM_PCI_IDS = ("/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids")
MELLANOX_VENDOR = "15b3"
_CLASS_DISPLAY = "03"  # 0300 VGA, 0302 3D controller
CLASS_INFINIBAND = "0207"
_CLASS_BRIDGE_OTHER = "0680"  # how NVSwitch presents itself


def parse_hex_id(text: str | None, digits: int = 4) -> str | None:
    """sysfs writes "0x10de\\n"; returns "10de", or None for anything that is not hex."""
    if text is None:
        return None
    value = text.strip().lower().removeprefix("0x")
    return value.zfill(digits) if re.fullmatch(r"[0-9a-f]{1,8}", value) else None


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def read_link(host: Host, base: str) -> PcieLink | None:
    speed_max = host.read_text(f"{base}/max_link_speed")
    if speed_max is None:
        return None
    speed_current = host.read_text(f"{base}/current_link_speed")
    return PcieLink(
        speed_current=speed_current.strip() if speed_current else None,
        speed_max=speed_max.strip(),
        width_current=_int(host.read_text(f"{base}/current_link_width")),
        width_max=_int(host.read_text(f"{base}/max_link_width")),
    )


def read_device(host: Host, address: str, vendor: str, class_code: str) -> PciDevice | None:
    base = f"{DEVICES}/{address}"
    device = parse_hex_id(host.read_text(f"{base}/device"))
    if device is None:
        return None
    driver = host.readlink(f"{base}/driver")
    numa = _int(host.read_text(f"{base}/numa_node"))
    return PciDevice(
        address=address,
        vendor_id=vendor,
        device_id=device,
        class_code=class_code,
        subsystem_vendor_id=parse_hex_id(host.read_text(f"{base}/subsystem_vendor")),
        subsystem_device_id=parse_hex_id(host.read_text(f"{base}/subsystem_device")),
        driver=driver.rsplit("/", 1)[-1] if driver else None,
        numa_node=numa if numa is not None and numa >= 0 else None,
        link=read_link(host, base),
    )


def bus_visible(host: Host) -> bool:
    """Whether sysfs shows any PCI device: every PCI machine has at least its host bridge, so an
    empty or missing /sys/bus/pci/devices means /sys could not be read (a chroot, a container)."""
    return bool(host.listdir(DEVICES))


def scan(host: Host) -> list[PciDevice]:
    """Every NVIDIA display, NVSwitch or InfiniBand device on the bus, in address order."""
    found = []
    for address in host.listdir(DEVICES):
        vendor = parse_hex_id(host.read_text(f"{DEVICES}/{address}/vendor"))
        class_code = parse_hex_id(host.read_text(f"{DEVICES}/{address}/class"), 6)
        if vendor is None or class_code is None:
            continue
        wanted = (vendor == gpus.NVIDIA_VENDOR and class_code[:2] == _CLASS_DISPLAY) or (
            class_code[:4] in (_CLASS_BRIDGE_OTHER, CLASS_INFINIBAND)
            and vendor in (gpus.NVIDIA_VENDOR, MELLANOX_VENDOR)
        )
        if wanted and (device := read_device(host, address, vendor, class_code)):
            found.append(device)
    return found


def system_pci_ids_names(host: Host, catalogue_version: str) -> tuple[str, dict[str, str]]:
    """NVIDIA names from the system pci.ids when it is newer than the shipped catalogue."""
    for path in SYSTEM_PCI_IDS:
        head = host.read_text(path, limit=4096)
        version = re.search(r"^#\s*Version:\s*(\S+)", head or "", re.MULTILINE)
        if version and version.group(1) > catalogue_version:
            return version.group(1), parse_pci_ids_nvidia(host.read_text(path) or "")
    return catalogue_version, {}


def parse_pci_ids_nvidia(text: str) -> dict[str, str]:
    """device id -> raw pci.ids name, for vendor 10de."""
    names: dict[str, str] = {}
    inside = False
    for line in text.splitlines():
        if line.startswith(f"{gpus.NVIDIA_VENDOR} "):
            inside = True
        elif inside and line and not line.startswith(("\t", "#")):
            break
        elif inside and (match := re.fullmatch(r"\t([0-9a-f]{4})\s+(.+)", line)):
            names[match.group(1)] = match.group(2)
    return names


def classify(host: Host, devices: list[PciDevice]) -> tuple[list[Gpu], list[PciDevice], str]:
    """Split NVIDIA devices into GPUs and NVSwitches; returns the pci.ids version used."""
    version, shipped = gpus.shipped_table()
    extra: dict[str, str] = {}
    nvidia = [d for d in devices if d.vendor_id == gpus.NVIDIA_VENDOR]
    if any(d.device_id not in shipped for d in nvidia):
        version, extra = system_pci_ids_names(host, version)
    found: list[Gpu] = []
    switches: list[PciDevice] = []
    for device in nvidia:
        if device.class_code.startswith(_CLASS_BRIDGE_OTHER):
            switches.append(device)  # NVIDIA's only "other bridge" devices are NVSwitches
            continue
        model = gpus.lookup(device.device_id) or gpus.unknown_model(
            device.device_id, extra.get(device.device_id, "")
        )
        found.append(Gpu(pci=device, model=model))
    return found, switches, version
