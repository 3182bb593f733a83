"""install-nvidia-driver: the recommended driver branch and flavour, as packages.

Ubuntu's archive carries the server branches (``nvidia-driver-580-server-open`` plus
``nvidia-utils-580-server`` so nvidia-smi exists); Debian and Rocky use NVIDIA's repository
(``nvidia-open`` / ``cuda-drivers``, the branch pinned by ``nvidia-driver-pinning-580``, a dnf
module stream on RHEL 8/9, or ``dnf versionlock add '*nvidia*580*'`` on RHEL 10, which has no
module streams: NVIDIA's driver installation guide, R620 edition), or on Debian its own non-free
packages (``nvidia-kernel-dkms``, ``libcuda1``, ``nvidia-smi``: what CUDA needs, without the X
server that ``nvidia-driver`` brings). Done means the packages are installed and a module exists
for the kernel that boots next; loading it is the next steps' job (load-nvidia-driver, else the
reboot).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.kernels import next_boot_kernel
from gpuwizard.core.ops import DnfModuleEnable, DnfVersionLock
from gpuwizard.core.plan import Action, Target
from gpuwizard.core.selection import DriverChoice
from gpuwizard.steps.base import Check, apt_install, install_packages, missing

SOURCES = {
    "ubuntu-archive": "Ubuntu's archive",
    "cuda-repo-apt": "NVIDIA's CUDA repository",
    "cuda-repo-dnf": "NVIDIA's CUDA repository",
    "debian-archive": "Debian's own archive (non-free, no third-party repository)",
}
NO_RECOMMENDS_WHY = (
    " Installed with --no-install-recommends: dkms recommends linux-headers-amd64, the headers of "
    "another kernel flavour, and DKMS would then build the module twice, once for a kernel that "
    "is not even installed."
)


@dataclass(frozen=True)
class InstallNvidiaDriver:
    family: str
    driver: DriverChoice
    id: str = "install-nvidia-driver"
    title: str = "Install the NVIDIA driver"
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    @property
    def why(self) -> str:
        flavor = {"open": "open kernel modules", "proprietary": "proprietary kernel modules"}.get(
            self.driver.flavor or "", ""
        )
        signed = (
            " Canonical-signed prebuilt modules load under Secure Boot without a MOK."
            if self.driver.signed_modules
            else ""
        )
        source = SOURCES.get(self.driver.source, self.driver.source)
        recommends = "" if self.recommends else NO_RECOMMENDS_WHY
        return (
            f"Driver branch R{self.driver.branch} with {flavor}, from {source}: it supports every GPU "
            f"here and runs the chosen PyTorch build.{signed}{recommends}"
        )

    @property
    def recommends(self) -> bool:
        """Debian's DKMS driver packages go without recommends (see NO_RECOMMENDS_WHY)."""
        debian_dkms = self.driver.source in ("cuda-repo-apt", "debian-archive")
        return not (self.family == "debian" and debian_dkms and not self.driver.signed_modules)

    def check(self, facts: HostFacts) -> Check:
        absent = missing(facts, self.driver.packages)
        return Check(
            not absent,
            f"not installed: {' '.join(absent)}"
            if absent
            else f"R{self.driver.branch} packages installed",
        )

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        actions: tuple[Action, ...] = ()
        if self.family == "rhel" and self.driver.module_stream:
            actions += (DnfModuleEnable(self.driver.module_stream),)
        if self.family == "rhel" and self.driver.version_lock:
            actions += (DnfVersionLock(self.driver.version_lock),)
        if self.family == "debian":
            return actions + apt_install(self.driver.packages, recommends=self.recommends)
        return actions + install_packages(self.family, self.driver.packages)

    def verify(self, facts: HostFacts) -> Check:
        installed = self.check(facts)
        if not installed.satisfied:
            return installed
        kernel = next_boot_kernel(facts)
        if kernel not in facts.installs.nvidia_module_kernels:
            return Check(
                False,
                f"no nvidia module was built for kernel {kernel}, which boots next: "
                "see /var/lib/dkms/nvidia/*/build/make.log",
            )
        return Check(True, f"R{self.driver.branch} installed, module built for {kernel}")
