"""The simulated reboot: a new boot, with what the last one prepared taking effect.

The boot_id changes; /run is emptied; the newest installed kernel runs; nouveau stays loaded
unless the initramfs was rebuilt with a blacklist in place (or ``nouveau_stays``); the nvidia
module loads when a driver is installed, a module exists for the new kernel, and Secure Boot
accepts it (signed prebuilt modules, or a MOK enrolled at the "console"). Then the runner that
asked for the reboot is killed, as a real reboot would, and started again by whoever resumes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import time
import uuid
from pathlib import Path

from gpuwizard.core.facts import BTIME_SLACK_S
from gpuwizard.core.version import kernel_sort_key
from gpuwizard.machine.detect.platform import PROC_STAT, parse_boot_id, parse_btime
from gpuwizard.runner.lock import read_run_record, runner_status
from gpuwizard.sim.effects import kernels
from gpuwizard.sim.machine import driver_version, sim_gpus
from gpuwizard.sim.sandbox import Sandbox, SimState

BASE_MODULES = (
    "tls 155648 0 - Live 0x0000000000000000\ndrm 774144 3 drm_kms_helper, Live 0x0000000000000000\n"
)


def module_line(name: str) -> str:
    return f"{name} 1048576 0 - Live 0x0000000000000000\n"


def running_kernel(sandbox: Sandbox) -> str:
    return sandbox.path("/proc/sys/kernel/osrelease").read_text().strip()


def load_now(sandbox: Sandbox, state: SimState, name: str) -> str:
    """``modprobe NAME`` on the running system: "" when loaded, else modprobe's error."""
    kernel = running_kernel(sandbox)
    modules = _loaded(sandbox)
    if name.replace("-", "_") not in ("nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm"):
        return f"modprobe: FATAL: Module {name} not found in directory /lib/modules/{kernel}"
    loads, error = nvidia_loads(sandbox, state, kernel)
    if not loads:
        return (
            error or f"modprobe: FATAL: Module {name} not found in directory /lib/modules/{kernel}"
        )
    if "nouveau" in modules:
        return "modprobe: ERROR: could not insert 'nvidia': No such device"
    wanted = ["nvidia"] + ([name.replace("-", "_")] if name.replace("-", "_") != "nvidia" else [])
    added = [m for m in wanted if m not in modules]
    version = driver_version(state)
    text = sandbox.path("/proc/modules").read_text()
    sandbox.path("/proc/modules").write_text(text + "".join(module_line(m) for m in added))
    module_version = sandbox.path("/sys/module/nvidia/version")
    module_version.parent.mkdir(parents=True, exist_ok=True)
    module_version.write_text(f"{version}\n")
    _rebind_gpus(sandbox, "nvidia")
    _device_files(sandbox, len(sim_gpus(sandbox)))
    return ""


def _loaded(sandbox: Sandbox) -> list[str]:
    path = sandbox.path("/proc/modules")
    return [
        line.split(" ", 1)[0] for line in (path.read_text() if path.exists() else "").splitlines()
    ]


def nvidia_loads(sandbox: Sandbox, state: SimState, kernel: str) -> tuple[bool, str]:
    if driver_version(state) is None:
        return False, ""
    base = sandbox.path(f"/lib/modules/{kernel}")
    dkms = (base / "updates" / "dkms" / "nvidia.ko.zst").exists()
    signed = any(base.glob("kernel/nvidia*/nvidia.ko"))
    if not (dkms or signed):
        return False, "modprobe: FATAL: Module nvidia not found in directory /lib/modules/" + kernel
    secure = "SecureBoot enabled" in sandbox.json("commands.json", {}).get(
        "mokutil --sb-state", {}
    ).get("stdout", "")
    if secure and dkms and not signed and state.mok != "enrolled":
        return False, "modprobe: ERROR: could not insert 'nvidia': Key was rejected by service"
    return True, ""


def reboot(sandbox: Sandbox) -> SimState:
    state = sandbox.load()
    scenario = sandbox.scenario()
    if scenario.get("reboot_does_nothing"):
        return state
    kernel = max(kernels(sandbox), key=kernel_sort_key)
    mok = state.mok
    if mok == "pending":
        # Someone at the console types the password into MokManager; it must be the one given.
        at_console = scenario.get("mok_enrolled_at_console", True)
        mok = "enrolled" if at_console and state.mok_console_matches else "not-enrolled"
    state = dataclasses.replace(state, mok=mok, reboots=state.reboots + 1)
    modules = _was_loaded(sandbox, "ib_core") + _was_loaded(sandbox, "mlx5_core")
    if _was_loaded(sandbox, "nouveau") and not (
        state.initramfs_blacklists_nouveau and not scenario.get("nouveau_stays")
    ):
        modules.append("nouveau")
    loads, error = nvidia_loads(sandbox, state, kernel)
    if loads:
        modules += ["nvidia", "nvidia_uvm", "nvidia_modeset"]
    _write_boot(sandbox, kernel, modules, error, driver_version(state) if loads else None)
    _rebind_gpus(sandbox, "nvidia" if loads else "nouveau" if "nouveau" in modules else None)
    _device_files(sandbox, len(sim_gpus(sandbox)) if loads else None)
    sandbox.save(state)
    # The new boot's signals last: whoever sees them (a front end waiting for the reboot) finds
    # the machine whole, as after a real reboot, never half rewritten.
    sandbox.path("/proc/sys/kernel/random/boot_id").write_text(str(uuid.uuid4()) + "\n")
    _new_btime(sandbox)
    return state


def _was_loaded(sandbox: Sandbox, name: str) -> list[str]:
    text = (
        sandbox.path("/proc/modules").read_text() if sandbox.path("/proc/modules").exists() else ""
    )
    return [name] if any(line.startswith(name + " ") for line in text.splitlines()) else []


def _write_boot(
    sandbox: Sandbox, kernel: str, modules: list[str], error: str, version: str | None
) -> None:
    sandbox.path("/proc/sys/kernel/osrelease").write_text(kernel + "\n")
    sandbox.path("/proc/modules").write_text(
        BASE_MODULES + "".join(module_line(m) for m in modules)
    )
    run = sandbox.path("/run")
    if run.exists():
        shutil.rmtree(run)
    run.mkdir()
    module_version = sandbox.path("/sys/module/nvidia/version")
    if version:
        module_version.parent.mkdir(parents=True, exist_ok=True)
        module_version.write_text(version + "\n")
    else:
        module_version.unlink(missing_ok=True)
    log = sandbox.path("/var/log/gpuwizard-sim-boot.log")
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(error + "\n" if error else "")


def _new_btime(sandbox: Sandbox) -> None:
    """A sandbox that has /proc/stat gets the new boot's start time (later than the last one's)."""
    stat = sandbox.path(PROC_STAT)
    if not stat.exists():
        return
    before = parse_btime(stat.read_text()) or 0
    btime = max(int(time.time()), before + BTIME_SLACK_S + 1)
    lines = [line for line in stat.read_text().splitlines() if not line.startswith("btime ")]
    stat.write_text("\n".join([*lines, f"btime {btime}"]) + "\n")


def _device_files(sandbox: Sandbox, gpus: int | None) -> None:
    """/dev/nvidia* exist while the driver is loaded (udev and nvidia-modprobe make them)."""
    dev = sandbox.path("/dev")
    for old in dev.glob("nvidia*") if dev.exists() else ():
        old.unlink()
    if gpus is None:
        return
    dev.mkdir(exist_ok=True)
    for name in [
        "nvidiactl",
        "nvidia-uvm",
        "nvidia-uvm-tools",
        *(f"nvidia{i}" for i in range(gpus)),
    ]:
        (dev / name).touch()


def _rebind_gpus(sandbox: Sandbox, driver: str | None) -> None:
    for device in sandbox.path("/sys/bus/pci/devices").glob("*"):
        vendor = (device / "vendor").read_text().strip() if (device / "vendor").exists() else ""
        klass = (device / "class").read_text().strip() if (device / "class").exists() else ""
        if vendor == "0x10de" and klass.startswith("0x03"):
            link = f"/sys/bus/pci/devices/{device.name}/driver"
            sandbox.set_link(link, f"../../../bus/pci/drivers/{driver}" if driver else None)


def boot_id_of(sandbox: Sandbox) -> str | None:
    boot = sandbox.path("/proc/sys/kernel/random/boot_id")
    return parse_boot_id(boot.read_text() if boot.exists() else None)


def kill_runner(state_dir: Path, boot_id: str | None) -> None:
    """A reboot ends every process: the runner of the boot that ends (``boot_id``) goes too.

    Only a runner alive by the A1 rule (run.json's pid, its start time *and* boot_id match) is
    killed: a pid alone may belong to another process by now (T13). Its process group goes with
    it only when it leads one of its own, as the detached runner does; never the group of
    whoever runs the runner in-process.
    """
    record = read_run_record(state_dir)
    if record is None or runner_status(state_dir, boot_id) != "running":
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.getpgid(record.pid) == record.pid:
            os.killpg(record.pid, signal.SIGKILL)
        else:
            os.kill(record.pid, signal.SIGKILL)
