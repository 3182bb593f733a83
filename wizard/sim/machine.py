"""The simulated machine as detection sees it: a Host over the sandbox whose probe commands and
NVML answer from the simulation's state, so a step's effect shows up in the next detection.

Probes the simulation models (rpm's package list, services, the MOK, cloud-init) answer from
sim.json, and dpkg's files read as rendered from it (``SimHost``); the rest replay the
profile's recording. NVML answers once the nvidia module is "loaded" (after a
simulated reboot), with the installed driver's version.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from gpuwizard.core.facts import FabricState, Gpu, Nvml, NvmlGpu, NvmlOk, NvmlUnavailable
from gpuwizard.core.paths import MANAGED_SERVICES
from gpuwizard.machine import dpkgdb
from gpuwizard.machine.detect import pci
from gpuwizard.machine.detect.installs import PACKAGE_PATTERNS
from gpuwizard.machine.detect.platform import BOOT_ID
from gpuwizard.machine.detect.recording import load_commands, recorded_host
from gpuwizard.machine.host import MISSING_TOOL, Host, Output
from gpuwizard.sim.effects import is_driver
from gpuwizard.sim.sandbox import Sandbox, SimState

_CUDA_FOR_BRANCH = {
    "595": "13.2",
    "580": "13.0",
    "575": "12.9",
    "570": "12.8",
    "550": "12.4",
    "535": "12.2",
    "470": "11.4",
}


def driver_version(state: SimState) -> str | None:
    for name, version in sorted(state.packages.items()):
        if is_driver(name):
            return version.split("-")[0]
    return None


def loaded_modules(sandbox: Sandbox) -> list[str]:
    text = (
        sandbox.path("/proc/modules").read_text() if sandbox.path("/proc/modules").exists() else ""
    )
    return [line.split(" ", 1)[0] for line in text.splitlines() if line.strip()]


@dataclass(frozen=True)
class SimProbes:
    """Answers detection's commands from the simulation's state."""

    sandbox: Sandbox

    def __call__(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> Output:
        del timeout_s
        state = self.sandbox.load()
        key = tuple(argv)
        if key[:2] == ("rpm", "-qa"):  # Debian's packages are read from dpkg's files
            return self.package_list(state)
        if key[:2] == ("systemctl", "is-enabled"):
            return self.services(state, key[2:])
        if key[:2] == ("mokutil", "--test-key"):
            return Output(0, _MOK_ANSWERS.get(state.mok, ""))
        if key == ("cloud-init", "status"):
            return self.cloud_init(state)
        if key == ("dmesg",) and state.reboots:
            return self.kernel_log()
        return self.recorded(argv)

    def package_list(self, state: SimState) -> Output:
        lines = [
            f"{name}\t{version}\t{'hi' if name in state.held else 'ii'} \n"
            for name, version in sorted(state.packages.items())
            if any(fnmatch.fnmatch(name, pattern) for pattern in PACKAGE_PATTERNS)
        ]
        return Output(0 if lines else 1, "".join(lines))

    def services(self, state: SimState, units: tuple[str, ...]) -> Output:
        recorded = self.recorded(["systemctl", "is-enabled", *MANAGED_SERVICES])
        if recorded.returncode == MISSING_TOOL:
            return recorded
        states = ["enabled" if unit in state.services else "disabled" for unit in units]
        return Output(0 if all(s == "enabled" for s in states) else 1, "\n".join(states) + "\n")

    def kernel_log(self) -> Output:
        """After a simulated reboot: the recorded boot banner, then this boot's driver messages."""
        recorded = self.recorded(["dmesg"]).stdout.splitlines()
        banner = [line for line in recorded if not re.search(r"nouveau|NVRM|nvidia|Xid", line)]
        modules = loaded_modules(self.sandbox)
        lines = [*banner, *(_NOUVEAU_LINE.format(gpu.pci.address) for gpu in sim_gpus(self.sandbox)
                            if "nouveau" in modules)]  # fmt: skip
        module = self.sandbox.path("/sys/module/nvidia/version")
        if "nvidia" in modules and module.exists():
            lines += [_NVRM_LINE.format(module.read_text().strip())]
        boot = self.sandbox.path("/var/log/gpuwizard-sim-boot.log")
        failure = boot.read_text().strip() if boot.exists() else ""
        if failure:  # what systemd-modules-load logs when the module fails at boot
            said = failure.replace("modprobe: ERROR: could not insert", "Failed to insert module")
            said = re.sub(
                r"modprobe: FATAL: Module (\S+) not found.*", r"Failed to find module '\1'", said
            )
            lines.append(f"[    6.204913] systemd-modules-load[412]: {said}")
        return Output(0, "".join(f"{line}\n" for line in lines))

    def cloud_init(self, state: SimState) -> Output:
        if state.cloud_init == "absent":
            return Output(MISSING_TOOL, "")
        code = {"done": 0, "running": 0, "degraded": 2, "error": 1}.get(state.cloud_init, 0)
        status = "done" if state.cloud_init == "degraded" else state.cloud_init
        return Output(code, f"status: {status}\n")

    def recorded(self, argv: Sequence[str]) -> Output:
        commands = load_commands(self.sandbox.directory)
        return commands.get(shlex.join(argv), Output(MISSING_TOOL, ""))


_NOUVEAU_LINE = "[    3.514223] nouveau {}: enabling device (0000 -> 0002)"
_NVRM_LINE = (
    "[    5.101293] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {}  Release Build  "
    "(dvs-builder@U16-I3-B03-4-3)"
)
_MOK_ANSWERS = {
    "enrolled": "/var/lib/dkms/mok.pub is already enrolled\n",
    "pending": "/var/lib/dkms/mok.pub is already in the enrollment request\n",
    "not-enrolled": "/var/lib/dkms/mok.pub is not enrolled\n",
}


@dataclass(frozen=True)
class SimNvml:
    """The driver's answer: from the recording until the simulation loads a driver of its own."""

    sandbox: Sandbox
    recorded: Nvml

    def __call__(self) -> Nvml:
        state = self.sandbox.load()
        version = driver_version(state)
        if version is None:
            return self.recorded
        if isinstance(self.recorded, NvmlOk) and self.recorded.driver_version == version:
            return self.recorded  # the recorded driver, untouched: its answer as recorded
        if "nvidia" not in loaded_modules(self.sandbox):
            return NvmlUnavailable(
                "the NVIDIA driver is installed but its kernel module is not loaded"
            )
        module = self.sandbox.path("/sys/module/nvidia/version")
        if module.exists() and module.read_text().strip() != version:
            # The libraries were upgraded (unattended-upgrades) under the loaded module (T23).
            return NvmlUnavailable(
                "driver/library version mismatch: the driver was updated without a reboot"
            )
        gpus = sim_gpus(self.sandbox)
        # NVSwitch boards: the GPUs join the fabric once Fabric Manager runs, else they wait.
        fabric: FabricState | None = None
        if sim_has_nvswitch(self.sandbox):
            fabric = "completed" if "nvidia-fabricmanager" in state.services else "in-progress"
        devices = tuple(
            NvmlGpu(
                i,
                g.pci.address,
                f"NVIDIA {g.model.name}",
                (g.model.memory_gib or 16) * 1024,
                4,
                4,
                16,
                16,
                "nvidia-persistenced" in state.services,
                clocks_event_mask=0x1,  # idle, nothing held down
                fabric_state=fabric,
            )
            for i, g in enumerate(gpus)
        )
        return NvmlOk(version, _CUDA_FOR_BRANCH.get(version.split(".")[0], "13.0"), devices)


def sim_gpus(sandbox: Sandbox) -> list[Gpu]:
    """The simulated machine's GPUs, as its PCI bus shows them."""
    host = recorded_host(sandbox.directory)
    return list(pci.classify(host, pci.scan(host))[0])


def sim_has_nvswitch(sandbox: Sandbox) -> bool:
    host = recorded_host(sandbox.directory)
    return bool(pci.classify(host, pci.scan(host))[1])


@dataclass(frozen=True)
class SimHost(Host):
    """The sandbox's files, but dpkg's database as the simulation's state holds it now.

    sim.json is the one record of what the stand-in tools did; dpkg's files are rendered from it
    on every read, so they can never disagree with it (a write of two files could be cut in
    half by the kills the fault tests make). Detection reads them through the door, as on a
    real machine."""

    sandbox: Sandbox | None = None

    def read_bytes(self, absolute: str, limit: int | None = None) -> bytes | None:
        if self.sandbox is not None and absolute == dpkgdb.STATUS and self.sandbox.has_dpkg:
            return render_status(self.sandbox.load()).encode()[:limit]
        if absolute == BOOT_ID and self.sandbox and self.sandbox.scenario().get("boot_id_hidden"):
            return None  # a container without it, or EACCES: the door reads nothing
        return super().read_bytes(absolute, limit)

    def listdir(self, absolute: str, limit: int | None = None) -> tuple[str, ...]:
        if self.sandbox is not None and absolute == dpkgdb.UPDATES and self.sandbox.has_dpkg:
            return ("0001",) if self.sandbox.load().dpkg_interrupted else ()
        return super().listdir(absolute, limit)


def render_status(state: SimState) -> str:
    """dpkg's status file for the simulated packages (held ones marked so)."""
    return dpkgdb.render(
        dpkgdb.Entry(name, version, "hold" if name in state.held else "install", "ok", "installed")
        for name, version in state.packages.items()
    )


def sandbox_host(sandbox: Sandbox) -> Host:
    """Detection's door into the simulated machine."""
    base = recorded_host(sandbox.directory)
    return SimHost(
        root=sandbox.root,
        run=SimProbes(sandbox),
        nvml=SimNvml(sandbox, base.nvml()),
        links=sandbox.links(),
        empty_dirs=base.empty_dirs,
        environ=base.environ,
        sandbox=sandbox,
    )
