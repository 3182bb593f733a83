"""Each doctor check, healthy and failing, on recorded hosts and small changes to them.

A case names the recorded host it starts from, what it changes (facts or readings), the check,
the severity it must answer, and words its finding must say. The machines themselves are in
wizard/sim/recorded-hosts: h200-ubuntu2404-driver570 is a working driver install,
a100x8-ubuntu2204-neglected a server with something wrong in every check.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuwizard.core.facts import HostFacts, NvmlUnavailable, Package, PcieLink
from gpuwizard.doctor.checks import run_checks
from gpuwizard.doctor.cuda import check_cuda_versions, check_torch_gpus
from gpuwizard.doctor.driver import (
    check_dev_nodes,
    check_driver,
    check_gpu_support,
    check_next_boot,
    check_nouveau,
    check_persistence,
)
from gpuwizard.doctor.findings import Finding
from gpuwizard.doctor.gpu_health import check_clocks, check_fabric_manager
from gpuwizard.doctor.hardware import check_ecc, check_pcie, check_xids
from gpuwizard.doctor.observed import (
    BatchFit,
    BenchFits,
    IbPort,
    KernelLog,
    LogText,
    Observed,
    Toolkit,
    TorchBuild,
)
from gpuwizard.doctor.secure_boot import check_secure_boot
from gpuwizard.doctor.training import check_multi_node, check_out_of_memory
from gpuwizard.doctor.wizard_run import check_skipped_steps
from gpuwizard.recommend.table import CompatTable
from tests.conftest import facts_of
from tests.doctor.conftest import observed_of, with_boot, with_gpus, with_installs, with_nvml

SAMPLES = Path(__file__).parent / "samples"
H200, V100, A100_FRESH = (
    "h200-ubuntu2404-driver570",
    "v100x4-ubuntu2204-driver535",
    "a100x4-ubuntu2004-fresh",
)
SICK, H100, WSL = (
    "a100x8-ubuntu2204-neglected",
    "h100x8-ubuntu2204-fresh",
    "wsl2-ubuntu2204-rtx4090",
)
ENV = "/opt/gpuwizard/envs/pytorch"

Facts = Callable[[HostFacts], HostFacts]
Seen = Callable[[Observed], Observed]


def same(value):  # type: ignore[no-untyped-def]
    return value


def sample(name: str) -> str:
    return (SAMPLES / f"{name}.txt").read_text(encoding="utf-8")


def kernel_log(text: str) -> Seen:
    return lambda seen: dataclasses.replace(seen, kernel_log=KernelLog("dmesg", text))


def torch(version: str, cuda: str | None, nvcc: str | None = None) -> Seen:
    build = TorchBuild(ENV, version, cuda, f"{ENV}/lib/python3.12/site-packages/torch/version.py")
    toolkit = Toolkit(f"/usr/local/cuda-{nvcc}/bin/nvcc", nvcc) if nvcc else None
    return lambda seen: dataclasses.replace(seen, torch=build, toolkit=toolkit)


def logs(*names: str) -> Seen:
    found = tuple(LogText(f"log {n}.txt", f"/home/ubuntu/{n}.txt", sample(n)) for n in names)
    return lambda seen: dataclasses.replace(seen, logs=found)


def unloaded(reason: str) -> Facts:
    """The driver is installed, but NVML fails for ``reason`` and no nvidia module is loaded."""
    return lambda f: with_boot(
        f, nvml=NvmlUnavailable(reason), modules=(), nvidia_module_version=None
    )


def SECURE_BOOT_DKMS(mok: str) -> Facts:
    return lambda f: with_installs(
        with_boot(
            f,
            secure_boot="enabled",
            modules=(),
            nvml=NvmlUnavailable(
                "the NVIDIA driver is installed but its kernel module is not loaded"
            ),
        ),
        mok=mok,
    )


DKMS_SIGNED: Seen = lambda seen: dataclasses.replace(seen, module_signer="DKMS module signing key")  # noqa: E731
BENCH = BenchFits("/var/lib/gpuwizard/bench/20261202-101500/results.json", "H200 NVL", "resnet50", 224,
                  (BatchFit("amp-bf16", 1, 384, 120_000), BatchFit("fp32", 1, 192, 118_000)))  # fmt: skip
IB_UP = (IbPort("mlx5_0", "1", "4: ACTIVE", "400 Gb/sec (4X NDR)", "InfiniBand"),)


def link(current: str, width: int) -> Facts:
    def change(f: HostFacts) -> HostFacts:
        first = f.hardware.gpus[0]
        pci = dataclasses.replace(first.pci, link=PcieLink(current, "32.0 GT/s PCIe", width, 16))
        gpus = (dataclasses.replace(first, pci=pci), *f.hardware.gpus[1:])
        return dataclasses.replace(f, hardware=dataclasses.replace(f.hardware, gpus=gpus))

    return lambda f: with_gpus(
        change(f), index=0, pcie_gen_current=5 if current.startswith("32") else 1
    )


def nvswitches(
    package: str | None = None, enabled: bool = False, state: str | None = None
) -> Facts:
    """H200's driver install on an NVSwitch board (the HGX H100's switches), with Fabric Manager
    at ``package``'s version (None: not installed), its service, and the GPUs' fabric state."""

    def change(f: HostFacts) -> HostFacts:
        switches = facts_of(H100).hardware.nvswitches
        f = dataclasses.replace(f, hardware=dataclasses.replace(f.hardware, nvswitches=switches))
        packages = f.installs.packages + (
            (Package("nvidia-fabricmanager-570", package),) if package else ()
        )
        services = (
            (*f.installs.services_enabled, "nvidia-fabricmanager")
            if enabled
            else f.installs.services_enabled
        )
        f = with_installs(f, packages=packages, services_enabled=services)
        return with_gpus(f, fabric_state=state)

    return change


CASES = [
    # driver: NVML answers for every GPU / libraries upgraded under the loaded module / a GPU gone
    pytest.param(H200, same, same, check_driver, "ok", ["answers for all 2"], id="driver: healthy"),
    pytest.param(H200, lambda f: with_boot(f, nvml=NvmlUnavailable("driver/library version mismatch: the driver was updated without a reboot"), nvidia_module_version="570.124.06"),
                 kernel_log(sample("nvrm-api-mismatch")), check_driver, "problem",
                 ["570.124.06", "570.133.20", "Reboot", "apt-mark hold", "API mismatch"], id="driver: library/module mismatch"),
    pytest.param(H200, unloaded("the NVIDIA driver is installed but its kernel module is not loaded"), kernel_log(sample("key-rejected")),
                 check_driver, "problem", ["not loaded", "Key was rejected"], id="driver: installed but not loaded"),
    pytest.param(A100_FRESH, same, same, check_driver, "warn", ["No NVIDIA driver", "gpuwizard"], id="driver: none yet"),
    pytest.param(SICK, same, same, check_driver, "problem", ["7 of 8", "0000:b7:00.0"], id="driver: a GPU off the bus"),
    # gpu-support: the driver branch knows every GPU
    pytest.param(V100, same, same, check_gpu_support, "ok", ["supports every GPU"], id="gpu-support: healthy"),
    pytest.param(V100, lambda f: with_nvml(f, driver_version="590.44.01", cuda_driver_version="13.1"), kernel_log(sample("legacy-driver")),
                 check_gpu_support, "problem", ["R580", "Tesla V100", "Tesla V100-SXM2-16GB GPU installed in this system"], id="gpu-support: legacy GPU on R590"),
    # nouveau
    pytest.param(H200, same, same, check_nouveau, "ok", ["out of the way"], id="nouveau: healthy"),
    pytest.param(A100_FRESH, same, same, check_nouveau, "ok", ["until the NVIDIA driver is installed"], id="nouveau: loaded before any driver is fine"),
    pytest.param(H200, lambda f: with_installs(with_boot(f, modules=("nouveau",)), nouveau_blacklisted=True),
                 kernel_log(sample("nouveau-loaded-kernel")), check_nouveau, "problem",
                 ["initramfs was not rebuilt", "update-initramfs", "already bound to nouveau"], id="nouveau: still loaded after the blacklist"),
    # secure-boot
    pytest.param(H200, same, same, check_secure_boot, "ok", ["unsigned modules"], id="secure-boot: off"),
    pytest.param(H200, SECURE_BOOT_DKMS("enrolled"), DKMS_SIGNED, check_secure_boot, "ok", ["enrolled"], id="secure-boot: on, key enrolled"),
    pytest.param(H200, SECURE_BOOT_DKMS("pending"), DKMS_SIGNED, check_secure_boot, "warn", ["MokManager"], id="secure-boot: on, enrollment waits for the console"),
    pytest.param(H200, SECURE_BOOT_DKMS("not-enrolled"), DKMS_SIGNED, check_secure_boot, "problem",
                 ["Key was rejected by service", "mokutil --import", "DKMS module signing key"], id="secure-boot: on, key never enrolled"),
    pytest.param(H200, SECURE_BOOT_DKMS("unknown"), kernel_log(sample("key-rejected-kernel")), check_secure_boot, "problem",
                 ["unsigned module loading is restricted"], id="secure-boot: the kernel log says rejected"),
    pytest.param(H200, SECURE_BOOT_DKMS("no-key"), lambda seen: dataclasses.replace(seen, module_signer=""), check_secure_boot, "problem",
                 ["not signed at all"], id="secure-boot: unsigned module"),
    pytest.param(H200, lambda f: with_boot(f, secure_boot="unknown"), same, check_secure_boot, "unknown", ["mokutil"], id="secure-boot: cannot tell"),
    # next-boot
    pytest.param(H200, same, same, check_next_boot, "ok", ["boots next has an nvidia module"], id="next-boot: healthy"),
    pytest.param(SICK, same, same, check_next_boot, "problem",
                 ["5.15.0-126-generic boots next", "linux-headers-5.15.0-126-generic", "dkms autoinstall"], id="next-boot: kernel update without its module"),
    # dev-nodes
    pytest.param(H200, same, same, check_dev_nodes, "ok", ["/dev: nvidia-modeset"], id="dev-nodes: healthy"),
    pytest.param(H200, same, lambda seen: dataclasses.replace(seen, dev_nodes=()), check_dev_nodes, "problem",
                 ["/dev/nvidiactl", "nvidia-modprobe"], id="dev-nodes: none after install"),
    pytest.param(H200, same, lambda seen: dataclasses.replace(seen, dev_nodes=("nvidia0", "nvidia1", "nvidiactl")), check_dev_nodes, "warn",
                 ["nvidia-uvm"], id="dev-nodes: no nvidia-uvm"),
    # skipped-steps: what the person skipped in the wizard's run (issue 31)
    pytest.param(H100, same, lambda s: dataclasses.replace(s, left=()), check_skipped_steps, "ok", ["No step"], id="skipped-steps: none"),
    pytest.param(H100, same, lambda s: dataclasses.replace(s, left=("Install Fabric Manager",)), check_skipped_steps, "warn",
                 ["Skipped in the setup: Install Fabric Manager", "not complete", "Run gpuwizard again"], id="skipped-steps: Fabric Manager"),
    # persistence
    pytest.param(V100, same, same, check_persistence, "ok", ["stays initialised"], id="persistence: on"),
    pytest.param(H200, same, same, check_persistence, "warn", ["nvidia-persistenced", "GPU 0, 1"], id="persistence: off"),
    # cuda-versions: driver vs toolkit vs torch
    pytest.param(H200, same, torch("2.9.0+cu128", "12.8", "12.8"), check_cuda_versions, "ok", ["driver 12.8, toolkit 12.8, torch 12.8"], id="cuda-versions: healthy"),
    pytest.param(SICK, same, same, check_cuda_versions, "problem",
                 ["built for CUDA 13.0 but driver 535.216.01 supports CUDA only up to 12.2", "nvcc is CUDA 12.4", "580"], id="cuda-versions: torch newer than the driver, nvcc behind"),
    pytest.param(H200, same, torch("2.9.0+cu129", "12.9"), check_cuda_versions, "warn", ["minor-version compatibility"], id="cuda-versions: newer minor runs through MVC"),
    pytest.param(H200, same, torch("2.9.0+cu128", "12.8", "12.6"), check_cuda_versions, "warn", ["nvcc is CUDA 12.6"], id="cuda-versions: nvcc a minor behind"),
    pytest.param(H200, same, torch("2.9.0+cpu", None), check_cuda_versions, "problem", ["CPU-only"], id="cuda-versions: CPU build on a GPU server"),
    # torch-gpus: "no kernel image is available"
    pytest.param(SICK, same, same, check_torch_gpus, "ok", ["kernels for every GPU"], id="torch-gpus: healthy"),
    pytest.param(V100, same, torch("2.14.1+cu130", "13.0"), check_torch_gpus, "problem",
                 ["V100", "sm_70", "no kernel image is available", "cu126"], id="torch-gpus: cu130 has no Volta kernels"),
    # pcie
    pytest.param(H200, same, same, check_pcie, "ok", ["PCIe links at Gen5 x16 of Gen5 x16 (2 GPUs)"], id="pcie: healthy"),
    pytest.param(SICK, same, same, check_pcie, "problem", ["0000:47:00.0: x8 of x16", "reseat"], id="pcie: x8 of x16"),
    pytest.param(H200, link("2.5 GT/s PCIe", 16), same, check_pcie, "warn", ["idle", "under load"], id="pcie: slower at idle warns only"),
    # xid
    pytest.param(H200, same, same, check_xids, "ok", ["no GPU faults"], id="xid: none"),
    pytest.param(SICK, same, same, check_xids, "problem", ["Xid 48", "double-bit ECC", "Xid 79", "RMA"], id="xid: DBE and fallen off the bus"),
    pytest.param(H200, same, kernel_log("[ 12.5] NVRM: Xid (PCI:0000:41:00): 13, pid=812, name=python, Graphics Exception"),
                 check_xids, "warn", ["graphics engine exception", "program"], id="xid: an application fault warns"),
    pytest.param(H200, same, lambda seen: dataclasses.replace(seen, kernel_log=None, unread=("kernel log: dmesg: read kernel buffer failed: Operation not permitted",)),
                 check_xids, "unknown", ["Operation not permitted", "sudo gpuwizard doctor"], id="xid: kernel log unreadable"),
    # ecc
    pytest.param(H200, same, same, check_ecc, "ok", ["ECC on (2 of 2 GPUs): 0 uncorrectable volatile, 0 aggregate; 0 rows remapped, none pending",
                                                     "No uncorrectable ECC errors"], id="ecc: healthy"),
    pytest.param(V100, same, same, check_ecc, "ok", ["ECC on (4 of 4 GPUs)", "no page retirement pending", "pages retired 0 single-bit / 0 double-bit"],
                 id="ecc: healthy Volta retires pages"),
    pytest.param(SICK, same, same, check_ecc, "problem", ["row remap waits for a reset", "nvidia-smi -r -i 4"], id="ecc: pending row remap"),
    pytest.param(H200, lambda f: with_gpus(f, index=1, ecc_uncorrected_aggregate=3), same, check_ecc, "warn", ["3 uncorrectable", "lifetime"], id="ecc: old uncorrectable errors warn"),
    pytest.param(H200, lambda f: with_gpus(f, index=0, remap_failed=True), same, check_ecc, "problem", ["RMA"], id="ecc: remapping failed"),
    # clocks: NVML's clocks event reasons
    pytest.param(H200, same, same, check_clocks, "ok", ["no power cap, thermal or hardware slowdown", "2 idle", "reasons 0x1"], id="clocks: idle, nothing held down"),
    pytest.param(H200, lambda f: with_gpus(f, index=1, clocks_event_mask=0x1 | 0x40), same, check_clocks, "problem",
                 ["GPU 1 clocks held down: thermal slowdown (hardware)", "heatsink", "reasons 0x41"], id="clocks: hardware thermal slowdown"),
    pytest.param(H200, lambda f: with_gpus(f, index=0, clocks_event_mask=0x4), same, check_clocks, "warn",
                 ["power cap", "Normal under full load", "nvidia-smi -q -d POWER"], id="clocks: power cap warns"),
    # fabric-manager: NVSwitch systems
    pytest.param(H200, nvswitches(), same, check_fabric_manager, "problem",
                 ["Fabric Manager not installed", "nvidia-fabricmanager-570", "system not yet initialized"], id="fabric-manager: not installed"),
    pytest.param(H200, nvswitches("570.133.20-1", enabled=True, state="completed"), same, check_fabric_manager, "ok",
                 ["Fabric Manager 570.133.20 enabled; 2 GPUs in the fabric"], id="fabric-manager: healthy"),
    pytest.param(H200, nvswitches("570.124.06-1", enabled=True, state="completed"), same, check_fabric_manager, "problem",
                 ["Fabric Manager 570.124.06 does not match driver 570.133.20", "exactly"], id="fabric-manager: another version"),
    pytest.param(H200, nvswitches("570.133.20-1", enabled=False, state="completed"), same, check_fabric_manager, "problem",
                 ["not enabled", "systemctl enable --now nvidia-fabricmanager"], id="fabric-manager: not enabled"),
    pytest.param(H200, nvswitches("570.133.20-1", enabled=True, state="in-progress"), same, check_fabric_manager, "problem",
                 ["2 GPUs not in the NVLink fabric", "GPU 0: fabric in-progress", "fabricmanager.log"], id="fabric-manager: GPUs not joined"),
    # out-of-memory: the guide's remedies with this machine's numbers
    pytest.param(H200, same, lambda seen: dataclasses.replace(seen, bench=BENCH), check_out_of_memory, "ok",
                 ["Nothing here ran out", "batch 384 per GPU fits"], id="out-of-memory: none, benchmark fits shown"),
    pytest.param(H200, same, lambda seen: dataclasses.replace(logs("cuda-oom")(seen), bench=BENCH), check_out_of_memory, "problem",
                 ["GPU 0 ran out", "2.00 GiB", "fitted batch 384 with amp-bf16, 192 with fp32", "checkpoint", "torch.bfloat16", "empty_cache"],
                 id="out-of-memory: OOM in a training log"),
    pytest.param(V100, same, logs("cuda-oom-old"), check_out_of_memory, "problem", ["torch.float16", "GradScaler", "gpuwizard bench"],
                 id="out-of-memory: float16 advice where bfloat16 is slow"),
    # multi-node
    pytest.param(H100, same, same, check_multi_node, "ok", ["InfiniBand up", "NCCL_IB_HCA=mlx5_0,mlx5_1", "NCCL_SOCKET_IFNAME=eno1", "NCCL_DEBUG=INFO"], id="multi-node: InfiniBand up"),
    pytest.param(SICK, same, same, check_multi_node, "problem", ["no active port", "NCCL_SOCKET_IFNAME=eno1,eno2", "NCCL_IB_DISABLE=1"], id="multi-node: InfiniBand ports down"),
    pytest.param(H200, same, logs("nccl-timeout"), check_multi_node, "problem", ["ALLREDUCE", "600000 ms", "NCCL_SOCKET_IFNAME=eno1np0"], id="multi-node: NCCL timeout"),
    pytest.param(H200, same, lambda seen: dataclasses.replace(seen, infiniband=IB_UP), check_multi_node, "warn",
                 ["GPUDirect RDMA off", "sudo modprobe nvidia_peermem", "/etc/modules-load.d/nvidia-peermem.conf"], id="multi-node: GPUDirect RDMA off"),
    pytest.param(V100, lambda f: dataclasses.replace(f, hardware=dataclasses.replace(f.hardware, nics=(dataclasses.replace(f.hardware.nics[0], speed_mbps=1000),))),
                 same, check_multi_node, "warn", ["1 Gb/s", "10 Gb/s"], id="multi-node: 1 GbE between nodes"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("profile", "change_facts", "change_seen", "check", "severity", "words"), CASES
)
def test_check(profile, change_facts, change_seen, check, severity, words, table: CompatTable):  # type: ignore[no-untyped-def]
    facts = change_facts(facts_of(profile))
    finding: Finding | None = check(facts, change_seen(observed_of(profile)), table)
    assert finding is not None
    said = " ".join((finding.title, finding.explanation, finding.fix, *finding.evidence))
    assert finding.severity == severity, said
    for word in words:
        assert word in said, f"{word!r} not in: {said}"
    if severity != "ok":
        assert finding.explanation.endswith((".", ")")), "one sentence, said in full"


def test_every_check_has_a_healthy_and_a_failing_case() -> None:
    from gpuwizard.doctor.checks import CHECKS

    answers: dict[str, set[str]] = {}
    for case in CASES:
        check, severity = case.values[3], case.values[4]
        answers.setdefault(check.__name__, set()).add(severity)
    for check in CHECKS:
        assert "ok" in answers[check.__name__], f"{check.__name__}: no healthy case"
        assert answers[check.__name__] & {"warn", "problem"}, f"{check.__name__}: no failing case"


def test_gpudirect_rdma_off_is_fixed_by_loading_nvidia_peermem(table: CompatTable) -> None:
    """Issue 31: GPUDirect RDMA off is fixed by loading nvidia_peermem, not by NCCL_DEBUG."""
    seen = dataclasses.replace(observed_of(H200), infiniband=IB_UP)
    finding = check_multi_node(facts_of(H200), seen, table)
    assert finding is not None and finding.fix.startswith("sudo modprobe nvidia_peermem")
    assert "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS" not in finding.fix


def test_in_a_container_the_gpus_health_is_checked_and_fixed_on_the_host(
    table: CompatTable,
) -> None:
    """A container sees the host's GPU through NVML: its ECC, link, clocks and persistence are
    true readings; what the driver owns (modules, nouveau, Secure Boot) is not checked, and a
    fix is done on the container's host."""
    facts = facts_of(H200)
    boxed = dataclasses.replace(
        facts, platform=dataclasses.replace(facts.platform, container="docker")
    )
    found = {f.check: f for f in run_checks(boxed, observed_of(H200), table)}
    assert {"ecc", "pcie", "persistence", "clocks", "xid"} <= set(found)
    assert not {"nouveau", "secure-boot", "next-boot", "dev-nodes", "gpu-support"} & set(found)
    assert found["persistence"].fix.startswith("On the container's host")


def test_without_systemd_persistence_is_set_with_nvidia_smi(table: CompatTable) -> None:
    facts = facts_of(H200)
    bare = dataclasses.replace(facts, platform=dataclasses.replace(facts.platform, systemd=False))
    finding = check_persistence(bare, observed_of(H200), table)
    assert finding is not None and finding.fix.startswith("sudo nvidia-smi -pm 1")


def test_checks_that_do_not_apply_say_nothing(table: CompatTable) -> None:
    """WSL: the driver is Windows'; nothing about modules, nouveau, Secure Boot or /dev."""
    found = {f.check for f in run_checks(facts_of(WSL), observed_of(WSL), table)}
    assert found == {"driver", "cuda-versions", "out-of-memory", "multi-node"}


def test_a_machine_without_gpus_cannot_be_checked(table: CompatTable) -> None:
    findings = run_checks(facts_of("nogpu-ubuntu2204"), observed_of("nogpu-ubuntu2204"), table)
    assert [f.severity for f in findings] == ["unknown"]


def test_a_failed_steps_log_becomes_a_known_error_finding(table: CompatTable) -> None:
    log = LogText(
        "failed step install-nvidia-driver (run-1a2b3c4d)",
        "/var/lib/gpuwizard/logs/run-1a2b3c4d/install-nvidia-driver.log",
        sample("dkms-build"),
    )
    seen = dataclasses.replace(
        observed_of(H200),
        logs=(
            log,
            LogText("failed step install-torch (run-1a2b3c4d)", "/x.log", "ERROR: something new"),
        ),
    )
    found = [f for f in run_checks(facts_of(H200), seen, table) if f.check == "known-error"]
    assert [(f.severity, f.title) for f in found] == [
        ("problem", "failed step install-nvidia-driver (run-1a2b3c4d): dkms-build"),
        ("warn", "failed step install-torch (run-1a2b3c4d): no known cause"),
    ]
    assert "/var/lib/dkms/nvidia/570.133.20/build/make.log" in found[0].explanation
