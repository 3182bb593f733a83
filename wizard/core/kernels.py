"""Which kernel boots next, which kernels need headers for a DKMS build, and what to install to
get those headers when the archive no longer carries them by name."""

from __future__ import annotations

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.version import kernel_flavour, kernel_sort_key


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


def headers_name(kernel: str) -> str:
    return f"linux-headers-{kernel}"


def offered(facts: HostFacts, package: str) -> bool:
    """apt can install this package now; unknown (no package lists) counts as yes."""
    available = facts.installs.archive_headers
    return available is None or package in available


def headers_gone(facts: HostFacts) -> str | None:
    """The running kernel's flavour when its headers can no longer be had (B1), else None.

    That is: it is also the kernel that boots next, its headers are not installed, apt cannot
    install them by name any more (Debian keeps a kernel ABI's headers only a few weeks after a
    newer ABI arrives), and the flavour's metapackage (``linux-headers-cloud-amd64``) can bring
    a newer kernel's. The way out is that newer kernel, its headers, and a reboot into it.
    """
    boot = facts.boot
    if facts.installs.archive_headers is None or boot.headers_present:
        return None
    if next_boot_kernel(facts) != boot.kernel or offered(facts, headers_name(boot.kernel)):
        return None
    flavour = kernel_flavour(boot.kernel)
    if flavour is None or not offered(facts, f"linux-headers-{flavour}"):
        return None
    return flavour


def headers_packages(facts: HostFacts, kernels: tuple[str, ...]) -> list[str]:
    """Each kernel's headers by name where apt has them, else its flavour's metapackage."""
    names: list[str] = []
    for kernel in kernels:
        name = headers_name(kernel)
        flavour = kernel_flavour(kernel)
        meta = f"linux-headers-{flavour}" if flavour else None
        if not offered(facts, name) and meta and offered(facts, meta):
            name = meta
        if name not in names:
            names.append(name)
    return names
