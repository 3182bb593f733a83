"""NVML, the driver's own view of the GPUs. The only module that imports pynvml.

Without a driver, ``nvmlInit`` fails with "library not found": that is the fact "no driver
installed yet", reported as ``NvmlUnavailable`` with a reason a person understands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuwizard.facts import Nvml, NvmlGpu, NvmlOk, NvmlUnavailable

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


def _optional(call: Callable[[], Any], nvml: Any) -> Any:
    try:
        return call()
    except nvml.NVMLError:
        return None


def _gpu(nvml: Any, index: int) -> NvmlGpu:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    pci = nvml.nvmlDeviceGetPciInfo(handle)
    bus_id = pci.busId.decode() if isinstance(pci.busId, bytes) else pci.busId
    name = nvml.nvmlDeviceGetName(handle)
    persistence = _optional(lambda: nvml.nvmlDeviceGetPersistenceMode(handle), nvml)
    return NvmlGpu(
        index=index,
        pci_bus_id=normalise_bus_id(bus_id),
        name=name.decode() if isinstance(name, bytes) else name,
        memory_total_mib=nvml.nvmlDeviceGetMemoryInfo(handle).total // (1024 * 1024),
        pcie_gen_current=_optional(lambda: nvml.nvmlDeviceGetCurrPcieLinkGeneration(handle), nvml),
        pcie_gen_max=_optional(lambda: nvml.nvmlDeviceGetMaxPcieLinkGeneration(handle), nvml),
        pcie_width_current=_optional(lambda: nvml.nvmlDeviceGetCurrPcieLinkWidth(handle), nvml),
        pcie_width_max=_optional(lambda: nvml.nvmlDeviceGetMaxPcieLinkWidth(handle), nvml),
        persistence_mode=None if persistence is None else persistence == nvml.NVML_FEATURE_ENABLED,
    )


def probe_nvml() -> Nvml:
    """Ask the driver; never raises."""
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
        return NvmlOk(
            driver_version=driver.decode() if isinstance(driver, bytes) else driver,
            cuda_driver_version=cuda_version_text(nvml.nvmlSystemGetCudaDriverVersion_v2()),
            gpus=tuple(_gpu(nvml, i) for i in range(nvml.nvmlDeviceGetCount())),
        )
    except nvml.NVMLError as error:
        return NvmlUnavailable(f"NVML failed while reading the GPUs: {error}")
    finally:
        nvml.nvmlShutdown()
