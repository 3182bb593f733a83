"""reboot: the reboot a step asked for, as a step of its own that the user confirms.

The runner records the boot_id, stops and asks; the machine is the truth afterwards: a changed
boot_id means the reboot happened, and the steps waiting for it are verified on fresh facts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpuwizard.core import ops
from gpuwizard.core.facts import HostFacts, NvmlOk
from gpuwizard.core.kernels import next_boot_kernel
from gpuwizard.core.plan import Action, Target
from gpuwizard.steps.base import Check
from gpuwizard.steps.blacklist_nouveau import nouveau_in_use

Condition = Callable[[HostFacts], "list[str]"]


def why_not_loaded(facts: HostFacts) -> str:
    """The likely cause when the driver module is not loaded, in the user's words ("" if unknown).

    After a reboot this is the diagnosis the person reads (T04, T18): the facts stand in for
    ``dkms status``, ``mokutil --test-key`` and ``lsmod``.
    """
    boot, installs = facts.boot, facts.installs
    if boot.nvidia_loaded:
        return ""
    # Before the reboot a newer kernel may be the one with the module; only judge the kernel
    # that will also boot next. A MOK "pending" is enrolled at that boot, so only "not-enrolled".
    if boot.kernel == next_boot_kernel(facts) and boot.kernel not in installs.nvidia_module_kernels:
        built = ", ".join(installs.nvidia_module_kernels) or "no kernel"
        return (
            f"no nvidia module exists for the running kernel {boot.kernel} (built for {built}); "
            "see `dkms status` and /var/lib/dkms/nvidia/*/build/make.log"
        )
    if boot.secure_boot == "enabled" and installs.mok == "not-enrolled":
        return (
            f"Secure Boot rejects the DKMS-built module: its MOK key is {installs.mok}; enroll it in "
            "MokManager on the console during the reboot, or use signed modules, or disable Secure Boot"
        )
    return ""


DRIVER_PACKAGES = ("nvidia", "libnvidia", "libcuda", "firmware-nvidia", "dkms")


def asked_only_for_the_driver(facts: HostFacts) -> bool:
    """/run/reboot-required names only driver packages: the reboot was for the driver itself."""
    packages = facts.boot.reboot_required_packages
    return bool(packages) and all(p.startswith(DRIVER_PACKAGES) for p in packages)


def driver_pending(branch: str) -> Condition:
    """Why a reboot is still needed for the driver: the list is empty once it is loaded."""

    def reasons(facts: HostFacts) -> list[str]:
        out = []
        nvml = facts.boot.nvml
        loaded = isinstance(nvml, NvmlOk) and nvml.driver_version.split(".")[0] == branch
        if not loaded:
            now = nvml.driver_version if isinstance(nvml, NvmlOk) else nvml.reason
            cause = why_not_loaded(facts)
            out.append(f"driver R{branch} is not loaded ({now})" + (f": {cause}" if cause else ""))
        if nouveau_in_use(facts):
            out.append("nouveau is loaded")
        if facts.boot.reboot_required and not (loaded and asked_only_for_the_driver(facts)):
            out.append("a package asked for a reboot")
        return out

    return reasons


@dataclass(frozen=True)
class Reboot:
    pending: Condition
    id: str = "reboot"
    title: str = "Reboot"
    why: str = (
        "The new kernel modules load at boot: nouveau leaves, the NVIDIA driver arrives. After the "
        "reboot, log in again and run gpuwizard: it checks everything again and continues."
    )
    needs_reboot: bool = True
    reboot: bool = True
    targets: tuple[Target, ...] = (Target.HOST,)
    only_if_needed: bool = False
    """The fallback after loading the driver live: it runs only if that failed."""

    def check(self, facts: HostFacts) -> Check:
        reasons = self.pending(facts)
        return Check(not reasons, "; ".join(reasons) if reasons else "nothing waits for a reboot")

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        return () if self.check(facts).satisfied else (ops.Reboot(),)

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
