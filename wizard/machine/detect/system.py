"""Server sizing facts: CPU, memory, disks, free space and network interfaces."""

from __future__ import annotations

import re

from gpuwizard.core.facts import Disk, FreeSpace, Nic, NicKind
from gpuwizard.machine.host import Host

_VIRTUAL_BLOCK = re.compile(r"^(loop|ram|zram|dm-|sr|md|nbd|fd)")
_ARPHRD = {"1": "ethernet", "32": "infiniband"}  # /sys/class/net/*/type, linux/if_arp.h
FREE_SPACE_PATHS = ("/", "/var", "/opt", "/home")


def parse_meminfo_mib(text: str) -> int:
    match = re.search(r"^MemTotal:\s+([0-9]{1,18})\s+kB", text, re.MULTILINE)
    return int(match.group(1)) // 1024 if match else 0


def parse_cpuinfo(text: str) -> tuple[str | None, int]:
    """(model name, logical CPU count); aarch64 kernels print no model name."""
    model = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    count = len(re.findall(r"^processor\s*:", text, re.MULTILINE))
    return (model.group(1).strip() if model else None), count


def parse_df(text: str) -> tuple[FreeSpace, ...]:
    """``df -P -B1 PATH...``: one line per path after the header; column 4 is available bytes."""
    rows = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 6 and fields[3].isdigit():
            rows.append(FreeSpace(path=fields[5], free_bytes=int(fields[3])))
    return tuple(rows)


# A hypervisor's disk, by what the kernel calls it: virtio-blk (vd*), Xen's blkfront (xvd*).
_HYPERVISOR_NAME = re.compile(r"^(vd|xvd)[a-z]")
# ... by where it sits in sysfs (/sys/block/X links to its device): virtio (virtio-scsi too),
# Hyper-V's VMBus (storvsc), Xen's virtual block devices.
_HYPERVISOR_PATH = re.compile(r"/virtio[0-9]|/VMBUS:|/vbd-")
# ... by what the device reports: QEMU's emulated disks ("QEMU HARDDISK", vendor "QEMU"),
# Amazon EBS over NVMe (the model amazon-ec2-utils' ebsnvme-id and udev rules match);
# VMware's and Hyper-V's ("Msft") vendor names are UNCONFIRMED (seen on such guests, no document).
_HYPERVISOR_MODEL = ("QEMU", "Amazon Elastic Block Store", "VMware", "Msft")
MODEL_BYTES = 256


def disk_model(host: Host, name: str) -> str | None:
    """ "ATA ST4000DM004-2U91" (SCSI/SATA: vendor and model), or an NVMe controller's model."""
    parts = [
        " ".join((host.read_text(f"/sys/block/{name}/device/{field}", MODEL_BYTES) or "").split())
        for field in ("vendor", "model")
    ]
    return " ".join(p for p in parts if p) or None


def is_hypervisor_disk(name: str, device_path: str | None, model: str | None) -> bool:
    """A virtual disk: its name, its place in sysfs or its model says a hypervisor made it."""
    return bool(
        _HYPERVISOR_NAME.match(name)
        or (device_path and _HYPERVISOR_PATH.search(device_path))
        or (model and model.startswith(_HYPERVISOR_MODEL))
    )


def read_disk(host: Host, name: str) -> Disk | None:
    sectors = (host.read_text(f"/sys/block/{name}/size", 64) or "").strip()
    if not sectors.isdigit():
        return None
    rotational = host.read_text(f"/sys/block/{name}/queue/rotational", 64)
    model = disk_model(host, name)
    return Disk(
        name=name,
        size_bytes=int(sectors) * 512,  # sysfs counts 512-byte sectors
        rotational=(rotational or "0").strip() == "1",
        nvme=name.startswith("nvme"),
        model=model,
        virtual=is_hypervisor_disk(name, host.readlink(f"/sys/block/{name}"), model),
    )


def read_disks(host: Host) -> tuple[Disk, ...]:
    names = [n for n in host.listdir("/sys/block", 256) if not _VIRTUAL_BLOCK.match(n)]
    return tuple(disk for name in names if (disk := read_disk(host, name)))


def df_command(host: Host) -> tuple[str, ...]:
    return ("df", "-P", "-B1", *(p for p in FREE_SPACE_PATHS if host.is_dir(p)))


def read_free_space(host: Host) -> tuple[FreeSpace, ...]:
    out = host.run(df_command(host))
    return parse_df(out.stdout) if out.stdout else ()


def parse_speed(text: str | None) -> int | None:
    """sysfs speed in Mb/s; -1 or unreadable (link down) -> None."""
    try:
        speed = int((text or "").strip())
    except ValueError:
        return None
    return speed if speed > 0 else None


def read_nics(host: Host) -> tuple[Nic, ...]:
    """Physical interfaces only: virtual ones (lo, docker0, veth*) have no device link."""
    nics = []
    for name in host.listdir("/sys/class/net"):
        if not host.exists(f"/sys/class/net/{name}/device"):
            continue
        kind: NicKind = _ARPHRD.get(
            (host.read_text(f"/sys/class/net/{name}/type") or "").strip(), "other"
        )  # type: ignore[assignment]
        nics.append(
            Nic(
                name=name,
                kind=kind,
                speed_mbps=parse_speed(host.read_text(f"/sys/class/net/{name}/speed")),
            )
        )
    return tuple(nics)
