"""load-nvidia-driver: load the new driver now, where nothing needs a reboot, and ask NVML.

A reboot is needed only for what happens at boot: nouveau holding the GPUs, a module built for
a kernel that is not running yet, a Secure Boot key enrolled at the console. Where none of that
applies (many cloud kernels ship no nouveau at all), ``modprobe`` loads the driver and NVML
confirms it; the reboot step after this one then finds nothing waiting and is skipped. When
loading fails, this step says why and the reboot step does the job, as it always did.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts, NvmlOk
from gpuwizard.core.kernels import headers_gone
from gpuwizard.core.machine_words import counted
from gpuwizard.core.ops import Command
from gpuwizard.core.plan import Action, Target
from gpuwizard.core.selection import Selection
from gpuwizard.steps.base import Check
from gpuwizard.steps.blacklist_nouveau import nouveau_in_use
from gpuwizard.steps.upgrade_kernel import kernel_pending

MODULES = ("nvidia", "nvidia_uvm")
"""The driver and its unified-memory module, which CUDA needs (nvidia-modprobe loads the rest)."""
MODPROBE_FAILED = 1


def driver_loaded(facts: HostFacts, branch: str) -> bool:
    nvml = facts.boot.nvml
    return isinstance(nvml, NvmlOk) and nvml.driver_version.split(".")[0] == branch


def reboot_needed_for(selection: Selection, facts: HostFacts) -> list[str]:
    """Why the driver can only arrive with a reboot on this host (empty: it can be loaded now)."""
    reasons = []
    if nouveau_in_use(facts):
        reasons.append("nouveau holds the GPUs until the next boot")
    if kernel_pending(facts) or headers_gone(facts):
        reasons.append("the module is built for a kernel that is not running yet")
    secure = facts.boot.secure_boot == "enabled" and not selection.driver.signed_modules
    if secure and facts.installs.mok != "enrolled":
        reasons.append("Secure Boot accepts the module only once its key is enrolled at boot")
    return reasons


@dataclass(frozen=True)
class LoadNvidiaDriver:
    branch: str
    id: str = "load-nvidia-driver"
    title: str = "Load the NVIDIA driver now, without a reboot"
    why: str = (
        "Nothing here needs a reboot: nouveau is not in the way, the module is built for the "
        "running kernel and Secure Boot asks for no new key. modprobe loads the driver and NVML "
        "must then answer; the reboot step that follows is skipped. If loading fails, this step "
        "shows why and the reboot loads the driver instead."
    )
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    def check(self, facts: HostFacts) -> Check:
        loaded = driver_loaded(facts, self.branch)
        return Check(
            loaded,
            f"driver R{self.branch} is loaded (NVML answers)"
            if loaded
            else f"driver R{self.branch} is not loaded yet",
        )

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        # modprobe's failure is an answer here, not an error: the reboot step is the fallback.
        return tuple(
            Command(("modprobe", module), timeout_s=300, ok_codes=(0, MODPROBE_FAILED))
            for module in MODULES
        )

    def verify(self, facts: HostFacts) -> Check:
        if driver_loaded(facts, self.branch):
            nvml = facts.boot.nvml
            count = len(nvml.gpus) if isinstance(nvml, NvmlOk) else 0
            return Check(
                True,
                f"driver R{self.branch} loaded without a reboot: NVML sees {counted(count, 'GPU')}",
            )
        nvml = facts.boot.nvml
        why = nvml.reason if not isinstance(nvml, NvmlOk) else f"NVML reports {nvml.driver_version}"
        return Check(True, f"the driver could not be loaded now ({why}); the reboot step loads it")
