"""Detection's door into a chroot machine: software from the real root, hardware from the
recorded profile, the boot from the machine's boot state.

Paths under /proc and /sys come from the profile (what a real kernel would show), except the
ones a boot changes (/proc/modules, osrelease, boot_id, /sys/module/nvidia/version, the GPUs'
driver links), which come from boot/state.json. Every other path is the root's, with symlinks
resolved inside the root as chroot resolves them (an absolute link never reaches the host).
Software probes (dpkg-query, dpkg --audit, apt-mark, apt-cache, systemctl is-enabled) run in the
root; ``mokutil`` asks the stand-in; the rest (uname -m, systemd-detect-virt, df, dmesg,
cloud-init status) replay the profile's recording strictly: a probe no one recorded raises.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpuwizard.core.facts import Nvml, NvmlGpu, NvmlOk, NvmlUnavailable
from gpuwizard.machine.detect.recording import RecordedCommands, load_commands, recorded_host
from gpuwizard.machine.host import COMMAND_ENV, Host, HostPathError, Output
from tests.chroot.machine import ChrootMachine

IN_ROOT_PROBES = ("dpkg-query", "dpkg", "apt-mark", "apt-cache", "systemctl", "mokutil")
BOOT_FILES = (
    "/proc/modules",
    "/proc/sys/kernel/osrelease",
    "/proc/sys/kernel/random/boot_id",
    "/sys/module/nvidia/version",
)
CUDA_FOR_BRANCH = {"595": "13.2", "580": "13.0", "570": "12.8", "550": "12.4", "535": "12.2"}
MAX_LINKS = 40


def resolve(root: Path, absolute: str, *, follow_last: bool = True) -> Path:
    """``absolute`` inside ``root``, following symlinks as a chroot would (never out of it)."""
    parts = [p for p in absolute.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise HostPathError(f"host paths may not contain '..': {absolute!r}")
    done: list[str] = []
    pending = list(parts)
    hops = 0
    while pending:
        name = pending.pop(0)
        candidate = root.joinpath(*done, name)
        last = not pending
        if candidate.is_symlink() and (follow_last or not last) and hops < MAX_LINKS:
            hops += 1
            target = str(candidate.readlink())
            if target.startswith("/"):
                done = []
            pending = [p for p in target.split("/") if p not in ("", ".")] + pending
            while ".." in pending[:1]:
                pending.pop(0)
                if done:
                    done.pop()
            continue
        if name == "..":
            if done:
                done.pop()
            continue
        done.append(name)
    return root.joinpath(*done)


@dataclass(frozen=True)
class ChrootProbes:
    machine: ChrootMachine
    recorded: RecordedCommands

    def __call__(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> Output:
        if argv[0] in IN_ROOT_PROBES:
            done = self.machine.run(argv, env=COMMAND_ENV, timeout_s=max(timeout_s, 60))
            return Output(done.returncode, done.stdout, done.stderr)
        return self.recorded(argv, timeout_s=timeout_s)


@dataclass(frozen=True)
class ChrootNvml:
    machine: ChrootMachine

    def __call__(self) -> Nvml:
        state = self.machine.state()
        version = state.get("nvidia_version")
        if "nvidia" not in state["modules"] or not version:  # type: ignore[operator]
            return NvmlUnavailable("no NVIDIA driver is loaded (libnvidia-ml.so.1 not found)")
        gpus = tuple(
            NvmlGpu(i, str(g["pci"]), str(g["name"]), int(g["memory_mib"]), persistence_mode=False)
            for i, g in enumerate(state["gpus"])  # type: ignore[arg-type,call-overload]
        )
        branch = str(version).split(".")[0]
        return NvmlOk(str(version), CUDA_FOR_BRANCH.get(branch, "12.2"), gpus)


@dataclass(frozen=True)
class ChrootHost(Host):
    machine: ChrootMachine = field(default=None)  # type: ignore[assignment]

    def _boot_file(self, absolute: str) -> bytes | None:
        state = self.machine.state()
        if absolute == "/proc/modules":
            return "".join(
                f"{m} 1048576 0 - Live 0x0000000000000000\n" for m in state["modules"]
            ).encode()  # type: ignore[attr-defined]
        if absolute == "/proc/sys/kernel/osrelease":
            return f"{state['kernel']}\n".encode()
        if absolute == "/proc/sys/kernel/random/boot_id":
            return f"{state['boot_id']}\n".encode()
        loaded = "nvidia" in state["modules"]  # type: ignore[operator]
        return f"{state['nvidia_version']}\n".encode() if loaded else None

    def path(self, absolute: str) -> Path:
        if absolute.startswith(("/proc/", "/sys/")) or absolute in ("/proc", "/sys"):
            return super().path(absolute)
        if not absolute.startswith("/"):
            raise HostPathError(f"host paths are absolute: {absolute!r}")
        return resolve(self.machine.root, absolute)

    def read_bytes(self, absolute: str, limit: int | None = None) -> bytes | None:
        if absolute in BOOT_FILES:
            data = self._boot_file(absolute)
            return data if data is None or limit is None else data[:limit]
        return super().read_bytes(absolute, limit)

    def exists(self, absolute: str) -> bool:
        if absolute in BOOT_FILES:
            return self._boot_file(absolute) is not None
        if absolute.startswith(("/proc", "/sys")):
            return super().exists(absolute)
        return os.path.lexists(resolve(self.machine.root, absolute, follow_last=False))

    def readlink(self, absolute: str) -> str | None:
        if absolute.startswith(("/proc", "/sys")):
            return super().readlink(absolute)
        try:
            return str(resolve(self.machine.root, absolute, follow_last=False).readlink())
        except OSError:
            return None


def gpu_links(machine: ChrootMachine, links: Mapping[str, str]) -> dict[str, str]:
    """The GPUs' driver links as this boot binds them (nvidia, nouveau, or none)."""
    state = machine.state()
    modules = state["modules"]
    driver = "nvidia" if "nvidia" in modules else "nouveau" if "nouveau" in modules else None  # type: ignore[operator]
    out = {k: v for k, v in links.items() if k.startswith(("/sys/", "/proc/"))}
    for gpu in state["gpus"]:  # type: ignore[attr-defined]
        link = f"/sys/bus/pci/devices/{gpu['pci']}/driver"
        out.pop(link, None)
        if driver:
            out[link] = f"../../../bus/pci/drivers/{driver}"
    return out


def chroot_host(machine: ChrootMachine) -> ChrootHost:
    """A fresh view of the machine (boot state is read on each access)."""
    recorded = recorded_host(machine.profile)
    empty = frozenset(d for d in recorded.empty_dirs if d.startswith(("/sys/", "/proc/")))
    return ChrootHost(
        root=machine.profile / "root",
        run=ChrootProbes(machine, RecordedCommands(load_commands(machine.profile))),
        nvml=ChrootNvml(machine),
        links=gpu_links(machine, recorded.links),
        empty_dirs=empty,
        machine=machine,
    )
