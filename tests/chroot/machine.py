"""A chroot machine: a real Debian root for everything software, a recorded profile for the
hardware, and a small boot folder for what changes at boot. The third kind of machine, beside
the real one and the simulated one.

Layout of ``folder``::

    root/      the real root (mmdebstrap): os-release, dpkg, apt, kernels, modules, Python, /opt
    profile/   the recorded host the hardware comes from (PCI sysfs, CPU, NVML's GPUs, dmesg ...)
    boot/      state.json (boot_id, running kernel, loaded modules, driver, Secure Boot, MOK),
               and the boot_id and osrelease files bound over the root's /proc for each command

Every command runs inside the root through ``in_root``: a new mount and pid namespace
(``unshare --mount --pid --fork``), /proc and a private /dev/pts mounted, the boot folder bound
at /run/gpuwizard-chroot and its boot_id/osrelease over /proc/sys/kernel, capabilities to load
modules and to reboot dropped, then ``chroot``. When the command ends its namespace goes, with
every process and mount in it: nothing stays mounted or running on the host. policy-rc.d keeps
services from starting; the stand-ins of ``standin.py`` answer for the boot, firmware and GPU.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuwizard.machine.detect import pci
from gpuwizard.machine.detect.recording import recorded_host
from gpuwizard.machine.host import SAFE_PATH
from tests.chroot import roots

STANDIN = Path(__file__).with_name("standin.py")
STANDIN_IN_ROOT = "/usr/local/lib/gpuwizard-chroot/standin.py"
STANDINS = {
    "/usr/local/sbin/modprobe": STANDIN_IN_ROOT,
    "/usr/local/sbin/reboot": STANDIN_IN_ROOT,
    "/usr/local/sbin/shutdown": STANDIN_IN_ROOT,
    "/usr/local/sbin/mokutil": STANDIN_IN_ROOT,
    "/usr/local/bin/nvidia-smi": STANDIN_IN_ROOT,
}
BOOT_MOUNT = "/run/gpuwizard-chroot"
POLICY_RC_D = (
    "#!/bin/sh\n# gpuwizard chroot machine: no service starts inside a chroot.\nexit 101\n"
)
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
IN_ROOT_ENV = {"PATH": SAFE_PATH, "LANG": "C.UTF-8", "HOME": "/root", "TERM": "dumb"}
# The wrapper is bash as the namespace's init: it mounts, runs the command as its child (init
# ignores signals it has no handler for) and exits with the command's status.
WRAPPER = r"""
set -e
R=$1 B=$2
shift 2
mount -t proc proc "$R/proc"
mkdir -p "$R/dev/pts"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$R/dev/pts"
mount --bind "$B/boot_id" "$R/proc/sys/kernel/random/boot_id"
mount --bind "$B/osrelease" "$R/proc/sys/kernel/osrelease"
mkdir -p "$R/run/gpuwizard-chroot"
mount --bind "$B" "$R/run/gpuwizard-chroot"
set +e
setpriv --bounding-set -sys_module,-sys_boot -- chroot "$R" /usr/bin/env -i "$@"
exit $?
"""


@dataclass(frozen=True)
class ChrootMachine:
    folder: Path

    @property
    def root(self) -> Path:
        return self.folder / "root"

    @property
    def boot(self) -> Path:
        return self.folder / "boot"

    @property
    def profile(self) -> Path:
        return self.folder / "profile"

    @property
    def state_dir(self) -> Path:
        """The runner's state, on the machine itself: it survives the fake reboot."""
        return self.root / "var" / "lib" / "gpuwizard"

    def path(self, absolute: str) -> Path:
        """A path inside the root (no symlink resolution: for files the harness itself writes)."""
        return self.root.joinpath(*[p for p in absolute.split("/") if p not in ("", ".", "..")])

    # ------------------------------------------------------------------------ boot state
    def state(self) -> dict[str, object]:
        data: dict[str, object] = json.loads((self.boot / "state.json").read_text())
        return data

    def set_state(self, **changes: object) -> None:
        state = {**self.state(), **changes}
        write_boot(self.boot, state)

    def boot_id(self) -> str:
        return str(self.state()["boot_id"])

    # -------------------------------------------------------------------------- commands
    def in_root(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> list[str]:
        """argv that runs ``argv`` inside the root, in a namespace of its own."""
        pairs = [f"{k}={v}" for k, v in {**IN_ROOT_ENV, **(env or {})}.items()]
        return [
            "unshare", "--mount", "--pid", "--fork", "--kill-child", "--propagation", "private",
            "bash", "-c", WRAPPER, "chroot-machine", str(self.root), str(self.boot), *pairs, *argv,
        ]  # fmt: skip

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        timeout_s: float = 600,
        input_text: str | None = None,
        check: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            self.in_root(argv, env),
            input=input_text,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout_s,
            check=False,
            stdin=None if input_text is not None else subprocess.DEVNULL,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"in the root, {' '.join(argv)} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
            )
        return done

    def sh(self, script: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        return self.run(["/bin/sh", "-c", script], **kwargs)  # type: ignore[arg-type]


def write_boot(boot: Path, state: Mapping[str, object]) -> None:
    boot.mkdir(parents=True, exist_ok=True)
    tmp = boot / "state.json.tmp"
    tmp.write_text(json.dumps(state, indent=1))
    tmp.replace(boot / "state.json")
    (boot / "boot_id").write_text(f"{state['boot_id']}\n")
    (boot / "osrelease").write_text(f"{state['kernel']}\n")


def newest_kernel(root: Path) -> str:
    from gpuwizard.core.version import kernel_sort_key

    kernels = [p.name for p in (root / "lib" / "modules").iterdir() if p.is_dir()]
    return max(kernels, key=kernel_sort_key)


def kernel_has_nouveau(root: Path, kernel: str) -> bool:
    drivers = root / "lib" / "modules" / kernel / "kernel" / "drivers" / "gpu"
    return drivers.is_dir() and any(drivers.rglob("nouveau.ko*"))


def profile_gpus(profile: Path) -> list[dict[str, object]]:
    host = recorded_host(profile)
    found = pci.classify(host, pci.scan(host))[0]
    return [
        {
            "name": f"NVIDIA {g.model.name}"
            if not g.model.name.startswith("Tesla")
            else g.model.name,
            "pci": g.pci.address,
            "memory_mib": (g.model.memory_gib or 16) * 1024,
            "capability": g.model.compute_capability,
        }
        for g in found
    ]


def initial_state(root: Path, profile: Path, kernel: str | None) -> dict[str, object]:
    """The first boot: the profile's hardware and loaded modules, the root's newest kernel.

    nouveau is loaded only where the running kernel ships it: a cloud kernel built without DRM
    has none, whatever a hand-made profile said (REAL-ROOT B7).
    """
    running = kernel or newest_kernel(root)
    recorded = (profile / "root" / "proc" / "modules").read_text().splitlines()
    names = [line.split(" ", 1)[0] for line in recorded if line.strip()]
    base = [n for n in names if not n.startswith("nvidia") and n != "nouveau"]
    nouveau = "nouveau" in names
    commands = json.loads((profile / "commands.json").read_text())
    sb_answer = commands.get("mokutil --sb-state", {})
    text = sb_answer.get("stdout", "") + sb_answer.get("stderr", "")
    secure = (
        "enabled"
        if "SecureBoot enabled" in text
        else "unsupported"
        if "EFI" in text
        else "disabled"
    )
    return {
        "boot_id": str(uuid.uuid4()),
        "kernel": running,
        "base_modules": base,
        "nouveau_at_boot": nouveau,
        "modules": [*base, *(["nouveau"] if nouveau and kernel_has_nouveau(root, running) else [])],
        "nvidia_version": None,
        "secure_boot": secure,
        "mok": "not-enrolled",
        "reboots": 0,
        "gpus": profile_gpus(profile),
    }


def prepare_root(machine: ChrootMachine) -> None:
    """What the machine adds to a fresh root: stand-ins, policy-rc.d, this network's CA."""
    standin = machine.path(STANDIN_IN_ROOT)
    standin.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(STANDIN, standin)
    standin.chmod(0o755)
    for link in STANDINS:
        target = machine.path(link)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        target.symlink_to(STANDIN_IN_ROOT)
    policy = machine.path("/usr/sbin/policy-rc.d")
    policy.write_text(POLICY_RC_D)
    policy.chmod(0o755)
    trust_this_network(machine)


def trust_this_network(machine: ChrootMachine) -> None:
    """HTTPS from this machine goes through its own CA: the root trusts what the host trusts
    (system store for curl and apt, and pip's ``cert``, as the host's /etc/pip.conf does)."""
    if HOST_CA.exists():
        local = machine.path("/usr/local/share/ca-certificates/gpuwizard-host-network.crt")
        local.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(HOST_CA, local)
        machine.run(["update-ca-certificates"], check=True, timeout_s=120)
    machine.path("/etc/pip.conf").write_text(
        "[global]\ncert = /etc/ssl/certs/ca-certificates.crt\ndisable-pip-version-check = true\n"
    )


def create_machine(
    folder: Path, archive: Path, profile: Path, *, kernel: str | None = None
) -> ChrootMachine:
    """A fresh machine: the root unpacked from ``archive``, the hardware of ``profile``.

    ``kernel`` pins the running kernel (default: the root's newest), e.g. an ABI the archive
    has dropped.
    """
    machine = ChrootMachine(folder)
    roots.unpack(archive, machine.root)
    shutil.copytree(profile, machine.profile)
    write_boot(machine.boot, initial_state(machine.root, machine.profile, kernel))
    prepare_root(machine)
    return machine


def remove_machine(machine: ChrootMachine) -> None:
    """Delete the machine; refuses if anything is still mounted beneath it."""
    mounts = Path("/proc/self/mounts").read_text().split("\n")
    inside = [m for m in mounts if f" {machine.folder}/" in m]
    assert not inside, f"still mounted under the machine: {inside}"
    shutil.rmtree(machine.folder, ignore_errors=True)
    os.sync()
