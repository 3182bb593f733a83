"""Which kernel boots next, and which kernels need headers for a DKMS build."""

from __future__ import annotations

from gpuwizard.facts import HostFacts
from gpuwizard.version import kernel_sort_key


def next_boot_kernel(facts: HostFacts) -> str:
    """Debian, Ubuntu and Rocky boot the newest installed kernel by default."""
    installed = facts.boot.installed_kernels
    if not installed:
        return facts.boot.kernel
    return max((*installed, facts.boot.kernel), key=kernel_sort_key)


def kernels_needing_modules(facts: HostFacts) -> tuple[str, ...]:
    """The kernel that boots next, and the running one unless a newer one replaces it."""
    upcoming = next_boot_kernel(facts)
    if upcoming != facts.boot.kernel:
        return (upcoming,)
    return (facts.boot.kernel,)
