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


def read_disks(host: Host) -> tuple[Disk, ...]:
    disks = []
    for name in host.listdir("/sys/block"):
        if _VIRTUAL_BLOCK.match(name):
            continue
        sectors = host.read_text(f"/sys/block/{name}/size")
        rotational = host.read_text(f"/sys/block/{name}/queue/rotational")
        if sectors is None or not sectors.strip().isdigit():
            continue
        disks.append(
            Disk(
                name=name,
                size_bytes=int(sectors.strip()) * 512,  # sysfs counts 512-byte sectors
                rotational=(rotational or "0").strip() == "1",
                nvme=name.startswith("nvme"),
            )
        )
    return tuple(disks)


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
