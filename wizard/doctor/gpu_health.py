"""Checks of a running GPU that NVML reports: why its clocks are held down, and, on NVSwitch
systems, Fabric Manager and each GPU's place in the NVLink fabric.

Clocks: NVML's clocks event reasons (nvmlDeviceGetCurrentClocksEventReasons, formerly
"throttle reasons"); a power cap under full load is normal, a hardware slowdown, hardware
thermal slowdown or power brake never is. Fabric Manager: on HGX boards CUDA has no usable GPU
until Fabric Manager, at exactly the driver's version, has joined every GPU to the fabric. Pure.
"""

from __future__ import annotations

from gpuwizard.core.facts import HostFacts, NvmlGpu, NvmlOk
from gpuwizard.core.machine_words import counted
from gpuwizard.doctor.driver import driver_installed, driver_version, gpus_here, on_the_host
from gpuwizard.doctor.findings import Finding, Severity
from gpuwizard.doctor.observed import Observed
from gpuwizard.recommend.table import CompatTable

CLOCKS_SOURCE = "NVML clocks event reasons (nvidia-smi -q -d PERFORMANCE)"
FABRIC_SOURCE = "NVIDIA Fabric Manager User Guide; NVML nvmlDeviceGetGpuFabricInfo"
FABRIC_UNIT = "nvidia-fabricmanager"
FABRIC_PACKAGES = ("nvidia-fabricmanager", "nvidia-fabric-manager", "cuda-drivers-fabricmanager")

# (NVML bit, what it is, severity, what to do), in the order nvidia-smi lists them.
CLOCK_REASONS: tuple[tuple[int, str, Severity, str], ...] = (
    (
        0x4,
        "power cap",
        "warn",
        "Normal under full load; at idle the power limit is set low: nvidia-smi -q -d POWER shows "
        "it, sudo nvidia-smi -pl WATTS raises it within the board's range.",
    ),
    (
        0x8,
        "hardware slowdown",
        "problem",
        "The board slowed the GPU (overheating or a power-supply fault): check the fans, airflow "
        "and the GPU's power cables, then nvidia-smi -q -d PERFORMANCE.",
    ),
    (
        0x20,
        "thermal slowdown (software)",
        "warn",
        "The driver slows the GPU as it nears its temperature limit: improve the cooling.",
    ),
    (
        0x40,
        "thermal slowdown (hardware)",
        "problem",
        "The GPU is at its hardware temperature limit: check the fans, the airflow and the heatsink.",
    ),
    (
        0x80,
        "power brake",
        "problem",
        "The chassis or power supply asserted the power-brake signal: check the power supply.",
    ),
)


def _clocks(gpu: NvmlGpu) -> str:
    parts = [f"GPU {gpu.index} ({gpu.pci_bus_id})"]
    if gpu.sm_clock_mhz is not None:
        parts.append(f"SM {gpu.sm_clock_mhz} of {gpu.sm_clock_max_mhz} MHz")
    if gpu.power_w is not None:
        parts.append(f"{gpu.power_w:g} of {gpu.power_limit_w:g} W")
    if gpu.temperature_c is not None:
        parts.append(f"{gpu.temperature_c} °C")
    parts.append(f"reasons 0x{gpu.clocks_event_mask or 0:x}")
    return ", ".join(parts)


def _held(gpus: list[NvmlGpu]) -> list[tuple[NvmlGpu, str, Severity, str]]:
    return [
        (g, name, level, fix)
        for g in gpus
        for bit, name, level, fix in CLOCK_REASONS
        if (g.clocks_event_mask or 0) & bit
    ]


def check_clocks(facts: HostFacts, seen: Observed, table: CompatTable) -> Finding | None:
    """Clocks held down by power, heat or the hardware, from NVML's event reasons."""
    del seen, table
    nvml = facts.boot.nvml
    if not gpus_here(facts) or not isinstance(nvml, NvmlOk):
        return None
    read = [g for g in nvml.gpus if g.clocks_event_mask is not None]
    if not read:
        return None  # a driver or pynvml that does not say
    evidence = tuple(_clocks(g) for g in read[:4])
    held = _held(read)
    if not held:
        idle = sum(1 for g in read if (g.clocks_event_mask or 0) & 0x1)
        return Finding(
            "clocks",
            "ok",
            "Clocks not held down: no power cap, thermal or hardware slowdown "
            f"({counted(len(read), 'GPU')}, {idle} idle)",
            "Nothing limits the GPUs' clocks now; an idle GPU runs slow clocks on purpose.",
            evidence=evidence,
            source=CLOCKS_SOURCE,
        )
    worst = sorted(held, key=lambda h: h[2] != "problem")
    gpu, name, level, fix = worst[0]
    others = sorted({f"{n} on GPU {g.index}" for g, n, _, _ in worst[1:]})
    also = f" Also: {', '.join(others)}." if others else ""
    return Finding(
        "clocks",
        level,
        f"GPU {gpu.index} clocks held down: {name}",
        f"NVML reports the GPU's clocks lowered by {name}.{also}",
        on_the_host(facts, fix),
        evidence,
        CLOCKS_SOURCE,
    )


def fabric_package(facts: HostFacts) -> tuple[str, str] | None:
    """(name, version) of the installed Fabric Manager package, if any."""
    return next(
        (
            (p.name, p.version)
            for p in facts.installs.packages
            if p.name.startswith(FABRIC_PACKAGES)
        ),
        None,
    )


def _unjoined(nvml: NvmlOk) -> list[str]:
    return [
        f"GPU {g.index}: fabric {g.fabric_state}"
        + (f" ({g.fabric_error})" if g.fabric_error else "")
        for g in nvml.gpus
        if g.fabric_state is not None and (g.fabric_state != "completed" or g.fabric_error)
    ]


def _fabric_trouble(
    facts: HostFacts, package: tuple[str, str] | None
) -> tuple[str, str, str] | None:
    """(title, explanation, fix) of what keeps the fabric from working, or None."""
    branch = (driver_version(facts) or "").split(".")[0]
    name = f"nvidia-fabricmanager-{branch}" if branch else "nvidia-fabricmanager-BRANCH"
    install = (
        f"sudo apt-get install {name} (dnf: nvidia-fabric-manager), then "
        f"sudo systemctl enable --now {FABRIC_UNIT}"
    )
    if package is None:
        return (
            "Fabric Manager not installed",
            "This is an NVSwitch system: without Fabric Manager CUDA finds no usable GPU "
            '("system not yet initialized").',
            f"{install}; or run gpuwizard (its install-fabric-manager step).",
        )
    version, driver = package[1].split("-", 1)[0].split(":")[-1], driver_version(facts)
    if driver and version != driver:
        return (
            f"Fabric Manager {version} does not match driver {driver}",
            "Fabric Manager refuses to start unless its version is exactly the driver's.",
            f"Install the matching version: {install}.",
        )
    if FABRIC_UNIT not in facts.installs.services_enabled:
        return (
            "Fabric Manager not enabled",
            "Fabric Manager is installed but not started at boot, so after a reboot the GPUs "
            "stay out of the NVLink fabric.",
            f"sudo systemctl enable --now {FABRIC_UNIT}",
        )
    return None


def check_fabric_manager(facts: HostFacts, seen: Observed, table: CompatTable) -> Finding | None:
    """NVSwitch systems: Fabric Manager installed at the driver's version, enabled, and every
    GPU joined to the fabric."""
    del seen, table
    if not facts.hardware.nvswitches or not gpus_here(facts) or not driver_installed(facts):
        return None
    package = fabric_package(facts)
    nvml = facts.boot.nvml if isinstance(facts.boot.nvml, NvmlOk) else None
    evidence = (
        f"{counted(len(facts.hardware.nvswitches), 'NVSwitch', 'NVSwitches')} on the PCI bus",
        f"package: {' '.join(package) if package else 'none'}",
        f"{FABRIC_UNIT} {'enabled' if FABRIC_UNIT in facts.installs.services_enabled else 'not enabled'}",
        *(_unjoined(nvml) if nvml else ()),
    )
    if trouble := _fabric_trouble(facts, package):
        title, explanation, fix = trouble
        return Finding(
            "fabric-manager",
            "problem",
            title,
            explanation,
            on_the_host(facts, fix),
            evidence,
            FABRIC_SOURCE,
        )
    if nvml and (unjoined := _unjoined(nvml)):
        return Finding(
            "fabric-manager",
            "problem",
            f"{counted(len(unjoined), 'GPU')} not in the NVLink fabric",
            "Fabric Manager runs but has not joined every GPU to the fabric: CUDA programs fail "
            'on them ("system not yet initialized").',
            on_the_host(
                facts,
                f"Read sudo journalctl -u {FABRIC_UNIT} and /var/log/fabricmanager.log; "
                f"then sudo systemctl restart {FABRIC_UNIT}.",
            ),
            evidence,
            FABRIC_SOURCE,
        )
    joined = sum(1 for g in nvml.gpus if g.fabric_state == "completed") if nvml else 0
    assert package is not None
    return Finding(
        "fabric-manager",
        "ok",
        f"Fabric Manager {package[1].split('-', 1)[0]} enabled; {counted(joined, 'GPU')} in the fabric",
        "Fabric Manager matches the driver and runs; the NVSwitch fabric is set up.",
        evidence=evidence,
        source=FABRIC_SOURCE,
    )
