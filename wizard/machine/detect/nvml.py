"""NVML, the driver's own view of the GPUs. The only module that imports pynvml.

Without a driver, ``nvmlInit`` fails with "library not found": that is the fact "no driver
installed yet", reported as ``NvmlUnavailable`` with a reason a person understands.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gpuwizard.core.facts import Nvml, NvmlGpu, NvmlOk, NvmlUnavailable

_INIT_FAILURES = {
    "NVMLError_LibraryNotFound": "no NVIDIA driver is installed (libnvidia-ml.so.1 not found)",
    "NVMLError_DriverNotLoaded": "the NVIDIA driver is installed but its kernel module is not loaded",
    "NVMLError_LibRmVersionMismatch": (
        "driver/library version mismatch: the driver was updated without a reboot"
    ),
    "NVMLError_NoPermission": "no permission to access the NVIDIA devices",
}


def normalise_bus_id(bus_id: str) -> str:
    """NVML says "00000000:1B:00.0"; sysfs says "0000:1b:00.0"."""
    domain, _, rest = bus_id.lower().partition(":")
    return f"{domain[-4:]}:{rest}"


def cuda_version_text(value: int) -> str:
    """nvmlSystemGetCudaDriverVersion gives 12040 for CUDA 12.4."""
    return f"{value // 1000}.{value % 1000 // 10}"


def _optional(nvml: Any, call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)``, or None where this GPU or driver does not support it."""
    try:
        return call(*args)
    except nvml.NVMLError:
        return None


CLOCK_LIMITS = (  # NVML's clocks event reasons that cost speed, as a person would say them
    (0x4, "power cap"),
    (0x8, "hardware slowdown"),
    (0x20, "thermal (software)"),
    (0x40, "thermal (hardware)"),
    (0x80, "power brake"),
)


def clock_limits(mask: int | None) -> tuple[str, ...]:
    return tuple(name for bit, name in CLOCK_LIMITS if mask is not None and mask & bit)


def _clock_mask(nvml: Any, handle: Any) -> int | None:
    for name in (
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetCurrentClocksThrottleReasons",
    ):
        if hasattr(nvml, name):  # renamed in newer drivers; the bits are the same
            return _optional(nvml, getattr(nvml, name), handle)  # type: ignore[no-any-return]
    return None


def _milliwatts(value: int | None) -> float | None:
    return None if value is None else round(value / 1000, 1)


def _p2p_unavailable(nvml: Any, handles: list[Any]) -> tuple[str, ...]:
    """Pairs without peer-to-peer reads (index 0 is NVML_P2P_CAPS_INDEX_READ; status 0 is OK)."""
    missing = []
    for a in range(len(handles)):
        for b in range(a + 1, len(handles)):
            status = _optional(nvml, nvml.nvmlDeviceGetP2PStatus, handles[a], handles[b], 0)
            if status is not None and status != 0:
                missing.append(f"{a}-{b}")
    return tuple(missing)


def _named(nvml: Any, name: str, *args: Any) -> Any:
    """Like ``_optional``, and None too where this pynvml predates the call."""
    call = getattr(nvml, name, None)
    return None if call is None else _optional(nvml, call, *args)


# NVML's enum values (nvml.h), spelled out so a pynvml without the constant still works.
_UNCORRECTED = 1  # NVML_MEMORY_ERROR_TYPE_UNCORRECTED
_VOLATILE, _AGGREGATE = 0, 1  # NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC


def _retired_pages(nvml: Any, handle: Any, cause: int) -> int | None:
    """How many pages were retired for a cause (0: multiple single-bit, 1: double-bit errors)."""
    pages = _named(nvml, "nvmlDeviceGetRetiredPages", handle, cause)
    return None if pages is None else len(pages)


_FABRIC_STATES = {1: "not-started", 2: "in-progress", 3: "completed"}  # 0: not supported


def _fabric(nvml: Any, handle: Any) -> dict[str, Any]:
    """NVSwitch systems: how far the GPU's registration in the NVLink fabric got, and its error.

    Asked through the oldest call (nvmlDeviceGetGpuFabricInfo, R525 and newer); a GPU without a
    fabric answers NotSupported or state 0, and both fields stay None."""
    structure = getattr(nvml, "c_nvmlGpuFabricInfo_t", None)
    call = getattr(nvml, "nvmlDeviceGetGpuFabricInfo", None)
    if structure is None or call is None:
        return {}
    info = structure()
    if _optional(nvml, call, handle, info) is None:
        return {}
    state = _FABRIC_STATES.get(int(info.state))
    if state is None:
        return {}
    error = None if int(info.status) == 0 else str(nvml.NVMLError(int(info.status)))
    return {"fabric_state": state, "fabric_error": error}


def _memory_health(nvml: Any, handle: Any) -> dict[str, Any]:
    """ECC mode and counters, retired pages (pre-Ampere) and row remapping (Ampere and newer).

    Every reading is optional: GeForce cards have no ECC, older GPUs no row remapping, newer ones
    no page retirement; those answer NotSupported and stay None.
    """
    mode = _named(nvml, "nvmlDeviceGetEccMode", handle)
    errors = "nvmlDeviceGetTotalEccErrors"
    pending = _named(nvml, "nvmlDeviceGetRetiredPagesPendingStatus", handle)
    remap = _named(nvml, "nvmlDeviceGetRemappedRows", handle)
    return {
        "ecc_enabled": None if mode is None else mode[0] == nvml.NVML_FEATURE_ENABLED,
        "ecc_uncorrected_volatile": _named(nvml, errors, handle, _UNCORRECTED, _VOLATILE),
        "ecc_uncorrected_aggregate": _named(nvml, errors, handle, _UNCORRECTED, _AGGREGATE),
        "retired_pages_pending": None if pending is None else bool(pending),
        "retired_pages_sbe": None if pending is None else _retired_pages(nvml, handle, 0),
        "retired_pages_dbe": None if pending is None else _retired_pages(nvml, handle, 1),
        "remapped_rows_correctable": None if remap is None else int(remap[0]),
        "remapped_rows_uncorrectable": None if remap is None else int(remap[1]),
        "remap_pending": None if remap is None else bool(remap[2]),
        "remap_failed": None if remap is None else bool(remap[3]),
    }


def _gpu(nvml: Any, index: int) -> NvmlGpu:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    pci = nvml.nvmlDeviceGetPciInfo(handle)
    bus_id = pci.busId.decode() if isinstance(pci.busId, bytes) else pci.busId
    name = nvml.nvmlDeviceGetName(handle)
    persistence = _optional(nvml, nvml.nvmlDeviceGetPersistenceMode, handle)
    mask = _clock_mask(nvml, handle)
    return NvmlGpu(
        index=index,
        pci_bus_id=normalise_bus_id(bus_id),
        name=name.decode() if isinstance(name, bytes) else name,
        memory_total_mib=nvml.nvmlDeviceGetMemoryInfo(handle).total // (1024 * 1024),
        pcie_gen_current=_optional(nvml, nvml.nvmlDeviceGetCurrPcieLinkGeneration, handle),
        pcie_gen_max=_optional(nvml, nvml.nvmlDeviceGetMaxPcieLinkGeneration, handle),
        pcie_width_current=_optional(nvml, nvml.nvmlDeviceGetCurrPcieLinkWidth, handle),
        pcie_width_max=_optional(nvml, nvml.nvmlDeviceGetMaxPcieLinkWidth, handle),
        persistence_mode=None if persistence is None else persistence == nvml.NVML_FEATURE_ENABLED,
        clock_limits=clock_limits(mask),
        clocks_event_mask=None if mask is None else int(mask),
        power_w=_milliwatts(_optional(nvml, nvml.nvmlDeviceGetPowerUsage, handle)),
        power_limit_w=_milliwatts(_optional(nvml, nvml.nvmlDeviceGetEnforcedPowerLimit, handle)),
        temperature_c=_optional(nvml, nvml.nvmlDeviceGetTemperature, handle, 0),
        sm_clock_mhz=_optional(nvml, nvml.nvmlDeviceGetClockInfo, handle, 1),
        sm_clock_max_mhz=_optional(nvml, nvml.nvmlDeviceGetMaxClockInfo, handle, 1),
        **_memory_health(nvml, handle),
        **_fabric(nvml, handle),
    )


NVML_LIBRARY = "libnvidia-ml.so.1"
LOADER_CACHE = Path("/etc/ld.so.cache")
# Where the dynamic loader looks without a cache entry (ld.so(8)), and WSL's driver folder.
_LOADER_DIRS = (
    "/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu", "/usr/lib/wsl/lib",
)  # fmt: skip


def library_findable(cache: Path = LOADER_CACHE, dirs: Sequence[str] = _LOADER_DIRS) -> bool:
    """Whether ``dlopen("libnvidia-ml.so.1")`` could find the library (the loader's cache,
    LD_LIBRARY_PATH, its default folders). Asked first so that a machine without a driver does
    not pay for importing pynvml (about 50 ms); when the cache cannot be read, NVML decides."""
    try:
        if NVML_LIBRARY.encode() in cache.read_bytes():
            return True
    except OSError:
        return True
    paths = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
    return any(Path(folder, NVML_LIBRARY).exists() for folder in (*paths, *dirs))


def probe_nvml(findable: Callable[[], bool] = library_findable) -> Nvml:
    """Ask the driver; never raises. ``findable`` checks for the library first."""
    if not findable():
        return NvmlUnavailable(_INIT_FAILURES["NVMLError_LibraryNotFound"])
    try:
        import pynvml as nvml
    except ImportError:
        return NvmlUnavailable("the nvidia-ml-py package is not installed")
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as error:
        return NvmlUnavailable(_INIT_FAILURES.get(type(error).__name__, f"NVML failed: {error}"))
    try:
        driver = nvml.nvmlSystemGetDriverVersion()
        count = nvml.nvmlDeviceGetCount()
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        return NvmlOk(
            driver_version=driver.decode() if isinstance(driver, bytes) else driver,
            cuda_driver_version=cuda_version_text(nvml.nvmlSystemGetCudaDriverVersion_v2()),
            gpus=tuple(_gpu(nvml, i) for i in range(count)),
            p2p_unavailable=_p2p_unavailable(nvml, handles),
        )
    except nvml.NVMLError as error:
        return NvmlUnavailable(f"NVML failed while reading the GPUs: {error}")
    finally:
        nvml.nvmlShutdown()
