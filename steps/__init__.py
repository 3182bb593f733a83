"""Install steps as pure declarations over HostFacts (steps/).

``build_steps(selection, facts)`` returns the steps for a selection in the order they must run;
``build_plan`` turns them into the reviewed ``Plan`` on given facts. Each step says what it would
change and why; the runner applies it. Steps never read the machine: a step that needs to know
something asks for a new fact.

The order: settle the machine (cloud-init, dpkg, a pending kernel and its reboot), add the
driver's package source (then the driver's packages can be fetched ahead, beside the next steps),
prepare the driver (headers, Secure Boot key, runfile removal, nouveau), install it (packages,
Fabric Manager, persistence, holds), one reboot for everything, then the user-space side (CUDA
toolkit, cuDNN, Python, environment, PyTorch, verification) and the optional extras. The source
comes after the kernel's upgrade, never before: a full upgrade with NVIDIA's repository in the
sources could move a driver that is already installed.
"""

from __future__ import annotations

import dataclasses

from gpuwizard.core.facts import HostFacts, NvmlUnavailable
from gpuwizard.core.kernels import headers_gone
from gpuwizard.core.plan import SCHEMA, Plan, StepPlan
from gpuwizard.core.selection import Selection
from gpuwizard.steps.add_cuda_repo import AddCudaRepo
from gpuwizard.steps.base import Cost, Step, step_plan
from gpuwizard.steps.blacklist_nouveau import BlacklistNouveau
from gpuwizard.steps.configure_nccl import ConfigureNccl
from gpuwizard.steps.create_env import CreateEnv
from gpuwizard.steps.enable_debian_nonfree import EnableDebianNonFree
from gpuwizard.steps.enable_persistence import EnablePersistence
from gpuwizard.steps.enroll_mok import EnrollMok
from gpuwizard.steps.hold_nvidia_packages import HoldNvidiaPackages
from gpuwizard.steps.install_cuda_toolkit import InstallCudaToolkit
from gpuwizard.steps.install_cudnn import InstallCudnn
from gpuwizard.steps.install_dcgm import InstallDcgm
from gpuwizard.steps.install_docker import InstallContainerToolkit, InstallDocker
from gpuwizard.steps.install_fabric_manager import InstallFabricManager
from gpuwizard.steps.install_headers import InstallHeaders
from gpuwizard.steps.install_nvidia_driver import InstallNvidiaDriver
from gpuwizard.steps.install_python import InstallPython
from gpuwizard.steps.install_torch import InstallTorch
from gpuwizard.steps.load_nvidia_driver import LoadNvidiaDriver, reboot_needed_for
from gpuwizard.steps.reboot import Reboot, driver_pending
from gpuwizard.steps.remove_runfile_driver import RemoveRunfileDriver
from gpuwizard.steps.repair_dpkg import RepairDpkg
from gpuwizard.steps.upgrade_kernel import UpgradeKernel, kernel_pending
from gpuwizard.steps.verify_torch import VerifyTorch
from gpuwizard.steps.wait_cloud_init import WaitCloudInit

# Typical download size and duration on a cloud server with a fast mirror, for the review screen.
COSTS: dict[str, Cost] = {
    "wait-cloud-init": Cost(0, 1), "repair-dpkg": Cost(0, 1), "upgrade-kernel": Cost(300, 5),
    "reboot-kernel": Cost(0, 3), "install-headers": Cost(20, 1), "enroll-mok": Cost(0, 1),
    "remove-runfile-driver": Cost(0, 1), "blacklist-nouveau": Cost(0, 1), "add-cuda-repo": Cost(1, 1),
    "enable-debian-nonfree": Cost(1, 0.2), "install-nvidia-driver": Cost(450, 6),
    "load-nvidia-driver": Cost(0, 0.2), "install-fabric-manager": Cost(10, 1), "enable-persistence": Cost(0, 0.1),
    "hold-nvidia-packages": Cost(0, 0.1), "reboot": Cost(0, 3), "install-cuda-toolkit": Cost(3500, 10),
    "install-cudnn": Cost(900, 3), "install-python": Cost(60, 1), "create-env": Cost(0, 1),
    "install-torch": Cost(3500, 6), "verify-torch": Cost(0, 1), "install-docker": Cost(100, 2),
    "install-container-toolkit": Cost(10, 1), "install-dcgm": Cost(400, 2), "configure-nccl": Cost(0, 0.1),
}  # fmt: skip


def _kernel_reboot_reasons(facts: HostFacts) -> list[str]:
    if kernel_pending(facts):
        return ["the updated kernel is not running yet"]
    if headers_gone(facts):
        return ["the running kernel's headers are gone from the archive: a newer kernel must run"]
    return []


def system_steps(s: Selection, facts: HostFacts) -> list[Step]:
    steps: list[Step] = []
    if facts.boot.cloud_init != "absent":
        steps.append(WaitCloudInit())
    if s.family == "debian":
        steps.append(RepairDpkg())
    if s.driver.installs and not s.wsl and not facts.platform.container:
        steps += [
            UpgradeKernel(s.family, headers_gone(facts)),
            Reboot(
                _kernel_reboot_reasons, id="reboot-kernel", title="Reboot into the updated kernel"
            ),
        ]
    return steps


def _library_mismatch(facts: HostFacts) -> list[str]:
    """The kept driver's libraries were upgraded under the loaded module (unattended-upgrades)."""
    nvml = facts.boot.nvml
    if isinstance(nvml, NvmlUnavailable) and "mismatch" in nvml.reason:
        return [f"the loaded driver module is older than its libraries ({nvml.reason})"]
    return []


def _codename(facts: HostFacts) -> str:
    return (facts.os.version_codename if facts.os else None) or "stable"


def driver_steps(s: Selection, facts: HostFacts) -> list[Step]:
    if s.wsl or facts.platform.container:
        return []  # the driver is Windows' or the container host's: nothing of it is ours
    if not s.driver.installs:
        # A kept driver on an NVSwitch system still needs its Fabric Manager (one skipped, or
        # never installed, is planned again); T23: nothing to install, but only a reboot loads
        # the driver the libraries now expect.
        kept: list[Step] = []
        if facts.hardware.nvswitches:
            kept.append(InstallFabricManager(s.family, s.driver.branch))
        if _library_mismatch(facts):
            kept.append(
                Reboot(
                    _library_mismatch,
                    id="reboot-driver-update",
                    title="Reboot to load the updated driver",
                )
            )
        return kept
    return [*_install_driver_steps(s, facts), *_load_driver_steps(s, facts)]


def _install_driver_steps(s: Selection, facts: HostFacts) -> list[Step]:
    # The driver's package source first: from then on apt can name the driver's packages, which
    # are fetched ahead while the headers install and the initramfs is rebuilt (core/ahead.py).
    steps: list[Step] = []
    if s.driver.source in ("cuda-repo-apt", "cuda-repo-dnf"):
        steps.append(AddCudaRepo(s.family, s.cuda_repo, s.repo_arch))
    if s.driver.source == "debian-archive":
        steps.append(EnableDebianNonFree(_codename(facts)))
    if not s.driver.signed_modules:
        steps.append(InstallHeaders(s.family))
        if facts.boot.secure_boot == "enabled":
            steps.append(EnrollMok())
    steps += [RemoveRunfileDriver(), BlacklistNouveau(s.family)]
    steps.append(InstallNvidiaDriver(s.family, s.driver))
    if facts.hardware.nvswitches:
        steps.append(InstallFabricManager(s.family, s.driver.branch))
    if s.request.persistence:
        steps.append(EnablePersistence())
    if s.request.hold_driver and s.family == "debian":
        steps.append(HoldNvidiaPackages(s.driver.packages))
    return steps


def _load_driver_steps(s: Selection, facts: HostFacts) -> list[Step]:
    """The reboot that loads the driver, or, where none is needed, loading it now (§4)."""
    if reboot_needed_for(s, facts):
        return [Reboot(driver_pending(s.driver.branch))]
    fallback = Reboot(
        driver_pending(s.driver.branch),
        title="Reboot, only if the driver could not be loaded without one",
        only_if_needed=True,
        why=(
            "Skipped when the step before loaded the driver: nothing else here waits for a boot. "
            "If loading failed, the reboot loads it; log in again afterwards and run gpuwizard: "
            "it checks everything again and continues."
        ),
    )
    return [LoadNvidiaDriver(s.driver.branch), fallback]


def user_steps(s: Selection, facts: HostFacts) -> list[Step]:
    steps: list[Step] = []
    wants = s.request
    needs_repo = bool(wants.needs_nvcc or wants.cudnn or wants.dcgm)
    if needs_repo and s.driver.source not in ("cuda-repo-apt", "cuda-repo-dnf"):
        steps.append(AddCudaRepo(s.family, s.cuda_repo, s.repo_arch))
    cuda_major = s.torch.variant[2:-1]
    if s.cuda_toolkit:
        steps.append(InstallCudaToolkit(s.family, s.cuda_toolkit))
    if wants.cudnn:
        steps.append(InstallCudnn(s.family, cuda_major))
    if s.env.existing is None:  # else the environment that is here is used as it is
        if s.env.python_source != "system" and s.env.kind == "venv":
            steps.append(InstallPython(s.family, s.env, s.arch))
        steps += [CreateEnv(s.env, s.arch, s.family), InstallTorch(s.env, s.torch, s.arch)]
    steps.append(VerifyTorch(s.env, s.torch, len(facts.hardware.gpus)))
    if wants.docker:
        steps += [InstallDocker(s.family), InstallContainerToolkit(s.family)]
    if wants.dcgm:
        steps.append(InstallDcgm(s.family, cuda_major, with_exporter=wants.docker))
    if wants.nccl:
        steps.append(ConfigureNccl())
    return steps


def build_steps(selection: Selection, facts: HostFacts) -> tuple[Step, ...]:
    """Every step for this selection, in order; ids are unique."""
    steps = [
        *system_steps(selection, facts),
        *driver_steps(selection, facts),
        *user_steps(selection, facts),
    ]
    ids = [step.id for step in steps]
    assert len(ids) == len(set(ids)), f"duplicate step ids: {ids}"
    return tuple(steps)


def _planned(step: Step, facts: HostFacts) -> StepPlan:
    plan = step_plan(step, facts, COSTS.get(step.id, Cost()))
    if isinstance(step, Reboot) and step.only_if_needed:
        return dataclasses.replace(plan, only_if_needed=True)
    return plan


def build_plan(selection: Selection, facts: HostFacts, summary: tuple[str, ...] = ()) -> Plan:
    """The plan the user reviews: every step with its actions on these facts (empty = done)."""
    steps = build_steps(selection, facts)
    plans = [_planned(step, facts) for step in steps]
    if any(p.actions for p in plans):
        # A verification from before a change (a reboot, a reinstall) proves nothing after it: the
        # plan that changes something verifies again, and the review shows it.
        plans = [
            dataclasses.replace(p, actions=step.probe())
            if isinstance(step, VerifyTorch) and not p.actions
            else p
            for step, p in zip(steps, plans, strict=True)
        ]
    return Plan(
        schema=SCHEMA,
        steps=tuple(plans),
        summary=summary,
        machine_id=facts.machine_id,
        boot_id=facts.boot.boot_id,
    )
