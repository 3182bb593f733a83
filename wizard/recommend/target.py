"""What the engine decides for: the GPUs, OS, driver, Python and state of one host.

A ``Target`` is built from detected ``HostFacts`` or from a description on the command line
(``--gpu H100 --os ubuntu:22.04 --driver 535.247.01``), so both paths meet the same rules.
Bad descriptions raise ``BadInput`` with one line naming the value and what is accepted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gpuwizard.core import gpus
from gpuwizard.core.facts import HostFacts, NvmlOk, SecureBootState
from gpuwizard.core.gpus import GpuModel
from gpuwizard.core.kernels import headers_gone
from gpuwizard.core.version import Version, is_version
from gpuwizard.recommend.os_support import OsRelease, is_guess, match_os
from gpuwizard.recommend.table import CompatTable, Flavor


class BadInput(ValueError):
    """A value the user gave that gpuwizard cannot use. The message is one line."""


@dataclass(frozen=True)
class ExistingDriver:
    version: str
    flavor: Flavor | None
    """None when it cannot be told (a runfile install, the Windows driver under WSL)."""

    @property
    def branch(self) -> str:
        return self.version.split(".")[0]


@dataclass(frozen=True)
class Target:
    gpus: tuple[GpuModel, ...]
    os_id: str | None
    os_version: str | None
    arch: str = "x86_64"
    driver: ExistingDriver | None = None
    python: str | None = None
    """The system python3's major.minor, or None when there is none."""
    secure_boot: SecureBootState = "unknown"
    kernel: str | None = None
    nvswitch: bool = False
    wsl: bool = False
    container: str | None = None
    headers_missing: bool = False
    pending_kernel: str | None = None
    """A newer installed kernel (or a pending reboot) that the next boot will run."""
    runfile_driver: bool = False
    dpkg_interrupted: bool = False
    nvml_problem: str | None = None
    """Why NVML could not be read, when a driver seems installed."""
    headers_gone: str | None = None
    """The running kernel's flavour when its headers have left the archive (a newer kernel
    of that flavour and its headers must come first)."""

    @property
    def driver_managed_elsewhere(self) -> bool:
        """Under WSL or in a container the driver belongs to the host, not to this system."""
        return self.wsl or self.container is not None


def _driver_flavor(facts: HostFacts) -> Flavor | None:
    names = [
        p.name
        for p in facts.installs.packages
        if p.name.startswith(("nvidia-driver", "nvidia-open", "nvidia-kernel-dkms"))
    ]
    if any(name.endswith("-open") or name == "nvidia-open" for name in names):
        return "open"
    return "proprietary" if names else None


def _driver_from_packages(facts: HostFacts) -> str | None:
    for package in facts.installs.packages:
        debian = package.name in ("nvidia-kernel-dkms", "nvidia-open-kernel-dkms")
        if debian or re.match(r"^nvidia-driver-\d+", package.name):
            version = package.version.split("-")[0]
            return version if is_version(version) else None
    return None


def target_from_facts(facts: HostFacts, table: CompatTable) -> Target:
    """The engine's view of detected facts; a derivative OS is named by the base it matches."""
    nvml = facts.boot.nvml
    said = nvml.driver_version if isinstance(nvml, NvmlOk) else None
    # NVML's word when it is a version ("570.133.20"); else (none, or "570.beta" from a facts
    # file or a recorded host) what the packages say.
    version = said if said and is_version(said) else _driver_from_packages(facts)
    driver = ExistingDriver(version, _driver_flavor(facts)) if version else None
    newer = [
        k
        for k in facts.boot.installed_kernels
        if Version.parse(_numeric(k)) > Version.parse(_numeric(facts.boot.kernel))
    ]
    pending = newer[-1] if newer else None
    if pending is None and facts.boot.reboot_required:
        pending = "a pending update"
    os = facts.os
    base = match_os(table, os.id, os.version_id, os.id_like, os.version_codename) if os else None
    guessed = bool(base and os and is_guess(base, os.id, os.version_id))
    return Target(
        gpus=tuple(gpu.model for gpu in facts.hardware.gpus),
        os_id=base.id if base else facts.os.id if facts.os else None,
        os_version=(os.version_id if guessed and os else base.version)
        if base
        else facts.os.version_id
        if facts.os
        else None,
        arch=facts.platform.arch,
        driver=driver,
        python=facts.python.system_python,
        secure_boot=facts.boot.secure_boot,
        kernel=facts.boot.kernel or None,
        nvswitch=bool(facts.hardware.nvswitches),
        wsl=facts.platform.wsl,
        container=facts.platform.container,
        headers_missing=not facts.boot.headers_present,
        pending_kernel=pending,
        runfile_driver=facts.installs.runfile_driver,
        dpkg_interrupted=facts.boot.dpkg_interrupted,
        nvml_problem=None if isinstance(nvml, NvmlOk) else nvml.reason,
        headers_gone=headers_gone(facts),
    )


def _numeric(kernel: str) -> str:
    """ "5.15.0-101-generic" -> "5.15.0.101" for ordering."""
    return ".".join(re.findall(r"[0-9]{1,18}", kernel)[:4]) or "0"


def resolve_gpu(query: str) -> GpuModel:
    found = gpus.find_models(query)
    if not found:
        raise BadInput(
            f"--gpu {query!r}: no NVIDIA GPU matches; give a PCI device id (10de:2330) "
            "or a model name (H100, A100 80GB, RTX 5090)"
        )
    if len({m.compute_capability for m in found}) > 1:
        names = ", ".join(
            sorted(
                {f"{m.name} (sm_{(m.compute_capability or '?').replace('.', '')})" for m in found}
            )[:4]
        )
        raise BadInput(f"--gpu {query!r} is ambiguous: {names}; give a fuller name or a PCI id")
    return found[0]


def parse_os(table: CompatTable, spec: str) -> tuple[OsRelease, str]:
    """The table row for ``--os ID:VERSION`` and the version asked for (which a newer, unlisted
    release keeps, so the recommendation can say it is a best guess)."""
    accepted = ", ".join(f"{o.id}:{o.version}" for o in table.operating_systems)
    os_id, sep, version = spec.partition(":")
    row: OsRelease | None = match_os(table, os_id.lower(), version) if sep and version else None
    if row is None:
        raise BadInput(
            f"--os {spec!r}: unknown OS; accepted: {accepted} (or a newer release of one of them)"
        )
    return row, version if is_guess(row, os_id.lower(), version) else row.version


_GRACE = re.compile(r"\b(GH200|GB200|GB300|GB10)\b")


def is_grace(model: GpuModel) -> bool:
    """Grace Hopper, Grace Blackwell and GB10 superchips: the GPU shares a package with an Arm
    CPU, so the host is aarch64 [S18][ARM]."""
    return bool(_GRACE.search(model.name))


def resolve_arch(models: Sequence[GpuModel], arch: str | None) -> str:
    """The CPU architecture: as given, else aarch64 for Grace superchips and x86_64 otherwise."""
    grace = [m for m in models if is_grace(m)]
    if arch is None:
        return "aarch64" if grace and len(grace) == len(models) else "x86_64"
    if arch == "x86_64" and grace:
        raise BadInput(
            f"--arch x86_64: {grace[0].name} is a Grace superchip, whose host CPU is aarch64; "
            "drop --arch or pass --arch aarch64"
        )
    return arch


def parse_driver(version: str) -> str:
    if not re.fullmatch(r"[0-9]{3}(\.[0-9]{1,3}){0,2}", version):
        raise BadInput(
            f"--driver {version!r}: expected a driver version like 535.247.01 or a branch like 580"
        )
    return version


def parse_python(version: str) -> str:
    if not re.fullmatch(r"3\.[0-9]{1,2}", version):
        raise BadInput(f"--python {version!r}: expected a Python version like 3.10")
    return version


def target_from_spec(
    table: CompatTable,
    gpu_queries: Sequence[str],
    os_spec: str,
    arch: str | None = None,
    driver: str | None = None,
    flavor: Flavor | None = None,
    python: str | None = None,
) -> Target:
    """A hypothetical host from command-line values; raises BadInput on the first bad one."""
    models = tuple(resolve_gpu(q) for q in gpu_queries)
    os_row, os_version = parse_os(table, os_spec)
    if flavor is not None and driver is None:
        raise BadInput("--driver-flavor needs --driver: the flavour of which installed driver?")
    existing = ExistingDriver(parse_driver(driver), flavor) if driver else None
    return Target(
        gpus=models,
        os_id=os_row.id,
        os_version=os_version,
        arch=resolve_arch(models, arch),
        driver=existing,
        python=parse_python(python) if python else os_row.python3,
        secure_boot="disabled",
        nvswitch=False,
    )
