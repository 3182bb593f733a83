"""probe_nvml against a stand-in pynvml: every call the real driver answers, and the ones an older
driver or GPU refuses (NVMLError_NotSupported) become None, never a failed detection."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass

import pytest

from gpuwizard.core.facts import NvmlOk, NvmlUnavailable
from gpuwizard.machine.detect.nvml import clock_limits, probe_nvml


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):
    pass


class NVMLError_LibraryNotFound(NVMLError):
    pass


@dataclass
class Pci:
    busId: bytes


@dataclass
class Memory:
    total: int


def fake_pynvml(*, gpus: int = 2, p2p_status: int = 0, init_error: type | None = None):  # type: ignore[no-untyped-def]
    module = types.ModuleType("pynvml")
    module.NVMLError = NVMLError  # type: ignore[attr-defined]
    module.NVML_FEATURE_ENABLED = 1  # type: ignore[attr-defined]

    def init() -> None:
        if init_error is not None:
            raise init_error()

    def not_supported(*_: object) -> None:
        raise NVMLError_NotSupported()

    calls = {
        "nvmlInit": init,
        "nvmlShutdown": lambda: None,
        "nvmlSystemGetDriverVersion": lambda: b"580.95.05",
        "nvmlSystemGetCudaDriverVersion_v2": lambda: 13000,
        "nvmlDeviceGetCount": lambda: gpus,
        "nvmlDeviceGetHandleByIndex": lambda i: i,
        "nvmlDeviceGetPciInfo": lambda h: Pci(f"00000000:{0x1B + h:02X}:00.0".encode()),
        "nvmlDeviceGetName": lambda h: "NVIDIA H100 80GB HBM3",
        "nvmlDeviceGetMemoryInfo": lambda h: Memory(81559 * 1024 * 1024),
        "nvmlDeviceGetPersistenceMode": lambda h: 1,
        "nvmlDeviceGetCurrPcieLinkGeneration": lambda h: 4 if h == 1 else 5,
        "nvmlDeviceGetMaxPcieLinkGeneration": lambda h: 5,
        "nvmlDeviceGetCurrPcieLinkWidth": lambda h: 16,
        "nvmlDeviceGetMaxPcieLinkWidth": lambda h: 16,
        "nvmlDeviceGetCurrentClocksEventReasons": lambda h: 0x4 | 0x40 | 0x1 if h == 1 else 0,
        "nvmlDeviceGetPowerUsage": lambda h: 699_500,
        "nvmlDeviceGetEnforcedPowerLimit": lambda h: 700_000,
        "nvmlDeviceGetTemperature": lambda h, sensor: 61,
        "nvmlDeviceGetClockInfo": not_supported,  # e.g. a vGPU that hides clocks
        "nvmlDeviceGetMaxClockInfo": lambda h, kind: 1980,
        "nvmlDeviceGetP2PStatus": lambda a, b, index: p2p_status,
    }
    for name, call in calls.items():
        setattr(module, name, call)
    return module


def test_every_reading_is_taken_and_unsupported_ones_are_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    nvml = probe_nvml(findable=lambda: True)
    assert isinstance(nvml, NvmlOk)
    assert (nvml.driver_version, nvml.cuda_driver_version) == ("580.95.05", "13.0")
    first, second = nvml.gpus
    assert first.pci_bus_id == "0000:1b:00.0"
    assert (second.pcie_gen_current, second.pcie_gen_max) == (4, 5)
    assert second.clock_limits == ("power cap", "thermal (hardware)")  # idle (0x1) is not a limit
    assert first.clock_limits == ()
    assert (first.power_w, first.power_limit_w, first.temperature_c) == (699.5, 700.0, 61)
    assert (first.sm_clock_mhz, first.sm_clock_max_mhz) == (None, 1980)
    assert first.persistence_mode is True
    assert nvml.p2p_unavailable == ()


def test_pairs_without_peer_to_peer_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(gpus=3, p2p_status=2))
    nvml = probe_nvml(findable=lambda: True)
    assert isinstance(nvml, NvmlOk)
    assert nvml.p2p_unavailable == ("0-1", "0-2", "1-2")


def test_no_driver_is_a_fact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(init_error=NVMLError_LibraryNotFound))
    assert probe_nvml(findable=lambda: True) == NvmlUnavailable(
        "no NVIDIA driver is installed (libnvidia-ml.so.1 not found)"
    )


def test_clock_limits_name_only_the_reasons_that_cost_speed() -> None:
    assert clock_limits(None) == ()
    assert clock_limits(0x1 | 0x2 | 0x10) == ()  # idle, application clocks, sync boost
    assert clock_limits(0x8 | 0x80) == ("hardware slowdown", "power brake")


def test_memory_health_is_read_where_the_gpu_has_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """ECC mode and counters, pending page retirement and row remapping, per GPU; a GPU that
    answers NotSupported (GPU 1 here, like a GeForce card) keeps them None."""
    module = fake_pynvml()

    def per_gpu(value):  # type: ignore[no-untyped-def]
        def call(handle, *args):  # type: ignore[no-untyped-def]
            if handle == 1:
                raise NVMLError_NotSupported()
            return value(*args) if callable(value) else value

        return call

    counts = {(1, 0): 2, (1, 1): 5}  # (uncorrected, volatile) and (uncorrected, aggregate)
    module.nvmlDeviceGetEccMode = per_gpu([1, 1])  # type: ignore[attr-defined]
    module.nvmlDeviceGetTotalEccErrors = per_gpu(lambda kind, counter: counts[(kind, counter)])  # type: ignore[attr-defined]
    module.nvmlDeviceGetRetiredPagesPendingStatus = per_gpu(0)  # type: ignore[attr-defined]
    module.nvmlDeviceGetRemappedRows = per_gpu((3, 1, 1, 0))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", module)

    nvml = probe_nvml(findable=lambda: True)

    assert isinstance(nvml, NvmlOk)
    first, second = nvml.gpus
    assert first.ecc_enabled is True
    assert (first.ecc_uncorrected_volatile, first.ecc_uncorrected_aggregate) == (2, 5)
    assert first.retired_pages_pending is False
    assert (first.remapped_rows_correctable, first.remapped_rows_uncorrectable) == (3, 1)
    assert (first.remap_pending, first.remap_failed) == (True, False)
    assert (second.ecc_enabled, second.ecc_uncorrected_volatile, second.remap_pending) == (
        None,
        None,
        None,
    )


def test_a_pynvml_without_the_memory_calls_leaves_them_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    nvml = probe_nvml(findable=lambda: True)
    assert isinstance(nvml, NvmlOk)
    gpu = nvml.gpus[0]
    assert (gpu.ecc_enabled, gpu.remapped_rows_uncorrectable, gpu.retired_pages_pending) == (
        None,
        None,
        None,
    )


def test_clocks_retired_pages_and_the_fabric_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The raw clocks event mask (0x1 idle is kept: it tells "not held down" from "not read"),
    page retirement counts where the GPU retires pages, and the NVLink fabric's state."""
    module = fake_pynvml()

    class FabricInfo:
        state = 0
        status = 0

    def fabric(handle: int, info: FabricInfo) -> int:
        info.state, info.status = (3, 0) if handle == 0 else (2, 0)
        return 0

    module.nvmlDeviceGetRetiredPagesPendingStatus = lambda handle: 0  # type: ignore[attr-defined]
    module.nvmlDeviceGetRetiredPages = lambda handle, cause: [0x1000] * (2 if cause == 0 else 1)  # type: ignore[attr-defined]
    module.c_nvmlGpuFabricInfo_t = FabricInfo  # type: ignore[attr-defined]
    module.nvmlDeviceGetGpuFabricInfo = fabric  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", module)

    nvml = probe_nvml(findable=lambda: True)

    assert isinstance(nvml, NvmlOk)
    first, second = nvml.gpus
    assert (first.clocks_event_mask, second.clocks_event_mask) == (0, 0x45)
    assert (first.retired_pages_sbe, first.retired_pages_dbe) == (2, 1)
    assert (first.fabric_state, second.fabric_state, first.fabric_error) == (
        "completed",
        "in-progress",
        None,
    )


def test_a_gpu_without_a_fabric_or_an_old_pynvml_leaves_it_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    nvml = probe_nvml(findable=lambda: True)
    assert isinstance(nvml, NvmlOk)
    assert (nvml.gpus[0].fabric_state, nvml.gpus[0].retired_pages_sbe) == (None, None)
