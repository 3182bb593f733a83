"""Checks of the driver stack: NVML, the GPUs the driver supports, nouveau, Secure Boot, the
module for the next boot, device files and persistence mode.

Each check is a pure function of the facts and the doctor's readings; it returns a ``Finding``,
or None when it does not apply to this machine (no GPU, WSL, no driver yet).
"""

from __future__ import annotations

from gpuwizard.core.facts import HostFacts, NvmlOk, NvmlUnavailable
from gpuwizard.core.hints import find
from gpuwizard.core.machine_words import counted
from gpuwizard.core.version import at_least, is_version, kernel_sort_key
from gpuwizard.doctor.findings import Finding
from gpuwizard.doctor.observed import Observed
from gpuwizard.recommend.rules import driver_floor_for, last_branch_for
from gpuwizard.recommend.table import CompatTable

RELIABILITY = "reliability.md"
DRIVER_PACKAGES = ("nvidia-driver-", "nvidia-open", "cuda-drivers", "libnvidia-compute-")
PERSISTENCE_FIX = "sudo systemctl enable --now nvidia-persistenced"


def driver_installed(facts: HostFacts) -> bool:
    """Some NVIDIA driver is on the machine: packages, a .run install, a built module, or NVML."""
    installs = facts.installs
    return (
        any(installs.has_package(prefix) for prefix in DRIVER_PACKAGES)
        or installs.runfile_driver
        or bool(installs.nvidia_module_kernels)
        or facts.boot.nvidia_loaded
        or isinstance(facts.boot.nvml, NvmlOk)
    )


def driver_version(facts: HostFacts) -> str | None:
    """The driver that runs (NVML, else the loaded module), else the installed package's."""
    if isinstance(facts.boot.nvml, NvmlOk):
        return facts.boot.nvml.driver_version
    if facts.boot.nvidia_module_version:
        return facts.boot.nvidia_module_version
    for package in facts.installs.packages:
        if package.name.startswith(DRIVER_PACKAGES):
            version = package.version.split("-", 1)[0].split(":")[-1]
            if is_version(version):
                return version
    return None


def library_version(facts: HostFacts) -> str | None:
    """The installed user-space libraries' version (libnvidia-compute or the driver package)."""
    for package in facts.installs.packages:
        if package.name.startswith(("libnvidia-compute-", "nvidia-utils-")):
            return package.version.split("-", 1)[0].split(":")[-1]
    return None


def next_kernel(facts: HostFacts) -> str | None:
    """The kernel that boots next: the newest installed (Debian, Ubuntu and RHEL default to it)."""
    kernels = facts.boot.installed_kernels or ((facts.boot.kernel,) if facts.boot.kernel else ())
    return max(kernels, key=kernel_sort_key) if kernels else None


def applies(facts: HostFacts) -> bool:
    """A machine with NVIDIA GPUs whose driver is its own (not WSL's, not a container's host)."""
    return bool(facts.hardware.gpus) and not facts.platform.wsl and not facts.platform.container


def gpus_here(facts: HostFacts) -> bool:
    """GPUs whose health NVML reports truly here: in a container too (the GPU is the host's,
    its ECC, link and clocks are not), not under WSL (Windows' driver answers for it)."""
    return bool(facts.hardware.gpus) and not facts.platform.wsl


def on_the_host(facts: HostFacts, fix: str) -> str:
    """A fix that acts on the driver or the hardware: in a container, done on its host."""
    if not facts.platform.container:
        return fix
    return f"On the container's host (the driver and the GPUs are its): {fix[0].lower()}{fix[1:]}"


def _mismatch(facts: HostFacts, seen: Observed) -> Finding:
    module = facts.boot.nvidia_module_version or "unknown"
    library = library_version(facts) or "a newer version"
    evidence = [f"loaded module {module}", f"installed libraries {library}"]
    if seen.kernel_log and (hit := find(seen.kernel_log.text, "nvrm-api-mismatch")):
        evidence.append(hit.line)
    return Finding(
        "driver",
        "problem",
        "Driver/library version mismatch",
        f"The driver's libraries ({library}) were updated while the older kernel module "
        f"({module}) is still loaded, so NVML, nvidia-smi and CUDA all fail.",
        "Reboot to load the new module; then hold the driver packages (sudo apt-mark hold "
        "'nvidia-*' 'libnvidia-*') so unattended upgrades cannot do it again.",
        tuple(evidence),
        f"{RELIABILITY} §3.4; shine-cluster#30",
    )


def _not_loaded(facts: HostFacts, seen: Observed) -> Finding:
    evidence = [
        f"kernel {facts.boot.kernel}",
        f"modules: {', '.join(facts.boot.modules) or 'none'}",
    ]
    log = seen.kernel_log.text if seen.kernel_log else ""
    for hint in ("key-rejected", "nouveau-loaded", "legacy-driver"):
        if hit := find(log, hint):
            evidence.append(hit.line)
    return Finding(
        "driver",
        "problem",
        "NVIDIA driver installed but not loaded",
        "The driver is installed but its kernel module is not loaded, so no program can use "
        'the GPUs (nvidia-smi: "couldn\'t communicate with the NVIDIA driver").',
        "See the Secure Boot, nouveau and next-boot findings for the cause; then "
        "`sudo modprobe nvidia` or reboot.",
        tuple(evidence),
        f"{RELIABILITY} §3.5-§3.7",
    )


def _pending(facts: HostFacts, seen: Observed) -> Finding:
    return Finding(
        "driver",
        "warn",
        "Reboot pending: the module is installed but not loaded",
        "gpuwizard installed the driver and waits for the reboot that loads its kernel module "
        f"({seen.reboot_pending}). Nothing is broken: until then no program can use the GPUs.",
        "Reboot (the wizard's reboot screen, or reboot the machine), then run gpuwizard again.",
        (f"kernel {facts.boot.kernel}", f"waiting for a reboot: {seen.reboot_pending}"),
        f"{RELIABILITY} §3.5",
    )


def _unavailable(facts: HostFacts, seen: Observed, reason: str) -> Finding:
    if seen.reboot_pending and ("not loaded" in reason or driver_installed(facts)):
        return _pending(facts, seen)
    if "mismatch" in reason:
        return _mismatch(facts, seen)
    if "not loaded" in reason:
        return _not_loaded(facts, seen)
    if "no NVIDIA driver is installed" in reason:
        if driver_installed(facts):
            return Finding(
                "driver", "problem", "Driver libraries missing",
                "Driver packages or modules are present but libnvidia-ml.so.1 is not: the "
                "install is incomplete.",
                "Reinstall the driver: run gpuwizard (or gpuwizard apply).",
                (reason,), RELIABILITY,
            )  # fmt: skip
        return Finding(
            "driver", "warn", "No NVIDIA driver yet",
            "No NVIDIA driver is installed, so PyTorch cannot use the GPUs yet.",
            "Run gpuwizard (or sudo gpuwizard apply) to install the recommended driver.",
            (reason,), "the guide's install section",
        )  # fmt: skip
    if "permission" in reason or "nvidia-ml-py" in reason or "not probed" in reason:
        return Finding(
            "driver", "unknown", "Driver not checked",
            f"NVML could not be asked: {reason}.",
            "Run `sudo gpuwizard doctor`.", (reason,),
        )  # fmt: skip
    return Finding("driver", "problem", "NVML fails", f"NVML fails: {reason}.", "", (reason,))


def check_driver(facts: HostFacts, seen: Observed, table: CompatTable) -> Finding | None:
    del table
    if not facts.hardware.gpus:
        return None
    nvml = facts.boot.nvml
    if isinstance(nvml, NvmlUnavailable):
        return _unavailable(facts, seen, nvml.reason)
    answered = {g.pci_bus_id for g in nvml.gpus}
    missing = [g.pci.address for g in facts.hardware.gpus if g.pci.address not in answered]
    title = f"Driver {nvml.driver_version} (CUDA {nvml.cuda_driver_version})"
    if missing and applies(facts):
        return Finding(
            "driver",
            "problem",
            f"{title}: {counted(len(missing), 'GPU')} missing",
            f"The driver answers for {len(nvml.gpus)} of {len(facts.hardware.gpus)} GPUs; "
            f"{', '.join(missing)} is on the PCI bus but not in NVML.",
            "Look for Xid 79 (fallen off the bus) or a legacy-driver message in the kernel log "
            "(see those findings); reboot, then reseat the card if it stays missing.",
            tuple(f"missing from NVML: {address}" for address in missing),
            "NVIDIA Xid catalogue",
        )
    return Finding(
        "driver",
        "ok",
        title,
        f"The driver answers for {'the GPU' if len(nvml.gpus) == 1 else f'all {len(nvml.gpus)} GPUs'}.",
        evidence=(f"driver {nvml.driver_version}", f"CUDA {nvml.cuda_driver_version}"),
    )


def check_gpu_support(facts: HostFacts, seen: Observed, table: CompatTable) -> Finding | None:
    """The driver's branch is one that supports every GPU (legacy branches, minimum drivers)."""
    version = driver_version(facts)
    if version is None or not applies(facts):
        return None
    branch = version.split(".")[0]
    for gpu in {g.model.device_id: g.model for g in facts.hardware.gpus}.values():
        last = last_branch_for(table, gpu)
        if last and branch.isdigit() and int(branch) > int(last):
            log = seen.kernel_log.text if seen.kernel_log else ""
            hit = find(log, "legacy-driver")
            return Finding(
                "gpu-support",
                "problem",
                f"Driver {version} does not support the {gpu.name}",
                f"The {gpu.name} ({gpu.arch}) is supported only up to R{last} (the 'NVIDIA "
                f"{last}.xx Legacy drivers'); driver {version} ignores it.",
                f"Install the R{last} driver (gpuwizard recommends it: "
                f"`gpuwizard recommend`) and hold it so upgrades stay on R{last}.",
                (f"driver {version}", f"last branch for the {gpu.name}: R{last}")
                + ((hit.line,) if hit else ()),
                "compat.md b.3, c.1 (R580 is the last branch for Maxwell, Pascal and Volta)",
            )
        floor = driver_floor_for(table, gpu)
        if floor and is_version(version) and not at_least(version, floor):
            return Finding(
                "gpu-support",
                "problem",
                f"Driver {version} is too old for the {gpu.name}",
                f"The {gpu.name} needs driver {floor} or newer; {version} does not know it.",
                "Upgrade the driver: `gpuwizard recommend` names the branch.",
                (f"driver {version}", f"needs {floor}"),
                "compat.md c.1",
            )
    return Finding(
        "gpu-support",
        "ok",
        f"Driver {version} supports every GPU",
        "No GPU here needs an older (legacy) or newer driver branch.",
        source="compat.md c.1",
    )


def check_nouveau(facts: HostFacts, seen: Observed, table: CompatTable) -> Finding | None:
    del table
    if not applies(facts):
        return None
    bound = [g.pci.address for g in facts.hardware.gpus if g.pci.driver == "nouveau"]
    if not facts.boot.nouveau_loaded and not bound:
        return Finding(
            "nouveau", "ok", "nouveau not loaded", "The open-source driver is out of the way."
        )
    evidence = ["nouveau is in /proc/modules"] if facts.boot.nouveau_loaded else []
    evidence += [f"{address} is bound to nouveau" for address in bound]
    log = seen.kernel_log.text if seen.kernel_log else ""
    if hit := find(log, "nouveau-loaded"):
        evidence.append(hit.line)
    if not driver_installed(facts):
        return Finding(
            "nouveau", "ok", "nouveau loaded (no NVIDIA driver yet)",
            "nouveau drives the GPUs until the NVIDIA driver is installed; the install "
            "blacklists it and rebuilds the initramfs.",
            evidence=tuple(evidence), source=f"{RELIABILITY} §3.7",
        )  # fmt: skip
    if seen.reboot_pending and facts.installs.nouveau_blacklisted:
        return Finding(
            "nouveau", "ok", "nouveau loaded until the pending reboot",
            "nouveau is blacklisted and leaves at the reboot the install waits for "
            f"({seen.reboot_pending}).",
            evidence=tuple(evidence), source=f"{RELIABILITY} §3.7",
        )  # fmt: skip
    rebuilt = "the blacklist exists, so the initramfs was not rebuilt after it was written"
    why = rebuilt if facts.installs.nouveau_blacklisted else "nothing blacklists it"
    return Finding(
        "nouveau",
        "problem",
        "nouveau still loaded",
        f"nouveau still holds the GPUs, so the NVIDIA driver cannot take them: {why}.",
        "Blacklist nouveau (echo -e 'blacklist nouveau\\noptions nouveau modeset=0' | sudo tee "
        "/etc/modprobe.d/blacklist-nouveau.conf), rebuild the initramfs (sudo update-initramfs "
        "-u -k all, or sudo dracut -f on RHEL) and reboot.",
        tuple(evidence),
        f"{RELIABILITY} §3.7; jakeday/linux-surface#264",
    )


def check_next_boot(facts: HostFacts, seen: Observed, table: CompatTable) -> Finding | None:
    """The kernel that boots next has an nvidia module (DKMS built it, or a signed package)."""
    del seen, table
    kernel = next_kernel(facts)
    if kernel is None or not applies(facts) or not driver_installed(facts):
        return None
    pending = f"; a reboot into {kernel} is pending" if kernel != facts.boot.kernel else ""
    built = facts.installs.nvidia_module_kernels
    evidence = (f"running {facts.boot.kernel}", f"boots next {kernel}",
                f"nvidia module built for: {', '.join(built) or 'no kernel'}")  # fmt: skip
    if kernel in built:
        return Finding(
            "next-boot", "ok", f"Module ready for {kernel}",
            f"The kernel that boots next has an nvidia module{pending}.", evidence=evidence,
        )  # fmt: skip
    headers = kernel in facts.boot.kernels_with_headers
    cause = (
        "DKMS had nothing to build with" if not headers else "its DKMS build failed or never ran"
    )
    return Finding(
        "next-boot",
        "problem",
        f"No nvidia module for {kernel}",
        f"{kernel} boots next but has no nvidia module ({cause}): after the reboot the GPUs "
        "will have no driver.",
        f"Install its headers (sudo apt-get install linux-headers-{kernel}, or kernel-devel-"
        f"{kernel} on RHEL), then sudo dkms autoinstall -k {kernel}; read the make.log DKMS "
        "names if the build fails.",
        evidence,
        f"{RELIABILITY} §3.6; zen-kernel#305",
    )


def check_dev_nodes(facts: HostFacts, seen: Observed, table: CompatTable) -> Finding | None:
    """/dev/nvidiactl, /dev/nvidia<N> and /dev/nvidia-uvm exist once the module is loaded."""
    del table
    if not applies(facts) or not facts.boot.nvidia_loaded:
        return None
    nodes = set(seen.dev_nodes)
    wanted = ["nvidiactl", *(f"nvidia{i}" for i in range(len(facts.hardware.gpus)))]
    missing = [f"/dev/{name}" for name in wanted if name not in nodes]
    evidence = (f"/dev: {', '.join(sorted(nodes)) or 'no nvidia* files'}",)
    if missing:
        return Finding(
            "dev-nodes",
            "problem",
            "Device files missing",
            f"The nvidia module is loaded but {', '.join(missing)} "
            f"{'does' if len(missing) == 1 else 'do'} not exist, so CUDA cannot open the GPUs.",
            "sudo nvidia-modprobe -c 0 -u (or run sudo nvidia-smi once, or enable "
            f"nvidia-persistenced: {PERSISTENCE_FIX}).",
            evidence,
            "NVIDIA driver README: device file creation",
        )
    if "nvidia-uvm" not in nodes:
        return Finding(
            "dev-nodes", "warn", "/dev/nvidia-uvm missing",
            "nvidia-uvm is created on first CUDA use by root; until then a non-root CUDA "
            "program may fail to start.",
            "sudo nvidia-modprobe -u -c 0", evidence, "NVIDIA driver README",
        )  # fmt: skip
    return Finding(
        "dev-nodes", "ok", "Device files present", "CUDA can open the GPUs.", evidence=evidence
    )


def persistence_fix(facts: HostFacts) -> str:
    """The service where systemd runs; nvidia-smi -pm 1 (until the next boot) where it does not."""
    if facts.platform.systemd is False and not facts.platform.container:
        return "sudo nvidia-smi -pm 1 (no systemd here: run it again after each boot)"
    return on_the_host(facts, PERSISTENCE_FIX)


def check_persistence(facts: HostFacts, seen: Observed, table: CompatTable) -> Finding | None:
    del seen, table
    nvml = facts.boot.nvml
    if not gpus_here(facts) or not isinstance(nvml, NvmlOk) or not nvml.gpus:
        return None
    off = [str(g.index) for g in nvml.gpus if g.persistence_mode is False]
    if all(g.persistence_mode is None for g in nvml.gpus):
        return None
    evidence = tuple(
        f"GPU {g.index} ({g.pci_bus_id}): persistence {'on' if g.persistence_mode else 'off'}"
        for g in nvml.gpus
        if g.persistence_mode is not None
    )
    if not off:
        return Finding(
            "persistence",
            "ok",
            f"Persistence mode on ({len(evidence)} of {counted(len(nvml.gpus), 'GPU')})",
            "The driver stays initialised between programs.",
            evidence=evidence[:4],
            source="NVML (nvidia-smi -q: Persistence Mode)",
        )
    return Finding(
        "persistence",
        "warn",
        f"Persistence mode off on GPU {', '.join(off)}",
        "Without persistence mode the driver tears the GPUs down when the last program "
        "exits: every start pays seconds of initialisation, and settings such as clocks reset.",
        persistence_fix(facts),
        tuple(f"GPU {i}: persistence off" for i in off),
        "NVIDIA driver persistence documentation",
    )
