"""What must change on the host before or beside the install, and the package names to use.

``changes`` lists what turns an ``ok`` into ``ok_after_changes``: work on what is already there
(an interrupted dpkg, a pending kernel, a runfile driver, a driver to replace, a Python to add,
a Secure Boot key to enroll). ``notes`` adds what the user should know but need not act on.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.recommend import debian_native
from gpuwizard.recommend.os_support import OsRelease
from gpuwizard.recommend.result import DriverPick, PythonPick
from gpuwizard.recommend.rules import DriverOption
from gpuwizard.recommend.table import CompatTable, TorchRelease
from gpuwizard.recommend.target import Target

UNKNOWN_KERNEL = "$(uname -r)"
HEADERS = ("linux-headers-{kernel}",)
"""What Debian's DKMS driver needs beside it (as the cuda-repo-apt row says for NVIDIA's)."""


@dataclass(frozen=True)
class DriverPackages:
    core: tuple[str, ...]
    """The driver itself (or Canonical's signed prebuilt modules plus the driver)."""
    supporting: tuple[str, ...]
    """What it needs here: kernel headers for DKMS, Fabric Manager on NVSwitch systems."""
    module_stream: str | None
    signed: bool
    version_lock: str | None = None
    """The dnf versionlock pattern that holds the branch where there are no module streams."""


def driver_packages(
    table: CompatTable, target: Target, os_row: OsRelease, option: DriverOption
) -> DriverPackages:
    flavor = option.flavor or "open"
    native = debian_native.row_for(os_row) if option.source == debian_native.SOURCE else None
    if native is not None:
        headers = tuple(t.format(kernel=target.kernel or UNKNOWN_KERNEL) for t in HEADERS)
        return DriverPackages(native.packages(flavor), headers, None, False)
    names = table.packages[os_row.driver_source]
    signed_names = names.signed_open if flavor == "open" else names.signed_proprietary
    signed = target.secure_boot == "enabled" and bool(signed_names)
    core = signed_names if signed else (names.open if flavor == "open" else names.proprietary)
    supporting = (() if signed else names.headers) + (
        names.fabricmanager if target.nvswitch else ()
    )
    kernel = target.kernel or UNKNOWN_KERNEL

    def fill(templates: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(
            dict.fromkeys(t.format(branch=option.branch, kernel=kernel) for t in templates)
        )

    streams = names.module_stream if os_row.dnf_modules else None
    stream = streams.get(flavor) if streams else None
    lock = names.version_lock if not os_row.dnf_modules else None
    return DriverPackages(
        fill(core),
        fill(supporting),
        stream.format(branch=option.branch) if stream else None,
        signed,
        lock.format(branch=option.branch) if lock else None,
    )


def changes(
    table: CompatTable,
    target: Target,
    os_row: OsRelease | None,
    driver: DriverPick,
    python: PythonPick,
    release: TorchRelease,
) -> tuple[str, ...]:
    out = []
    if target.dpkg_interrupted:
        out.append("repair the interrupted package database first (dpkg --configure -a)")
    if target.headers_gone and not target.driver_managed_elsewhere and driver.action != "keep":
        out.append(
            f"the headers of the running kernel {target.kernel} are gone from the archive: install "
            f"the newest {target.headers_gone} kernel with its headers and reboot into it before "
            "the driver, so the module is built for the kernel that will run"
        )
    if target.pending_kernel and not target.driver_managed_elsewhere and driver.action != "keep":
        out.append(
            f"apply the pending kernel update ({target.pending_kernel}) and reboot before the driver, "
            "so the module is built for the kernel that will run"
        )
    if target.runfile_driver and driver.action != "keep":
        out.append(
            "remove the driver installed by NVIDIA's .run installer (nvidia-uninstall) before installing packages"
        )
    if driver.action == "upgrade" and target.driver:
        out.append(_replacement(target, driver))
    if target.nvml_problem and target.driver and "mismatch" in target.nvml_problem:
        out.append(
            f"reboot to load the installed driver: {target.nvml_problem}; "
            "hold the driver packages (--hold-driver) so unattended upgrades cannot do it again"
        )
    if python.action == "install":
        system = (
            f"the system's python3 is {target.python}"
            if target.python
            else "there is no system python3"
        )
        out.append(
            f"install Python {python.version} beside the system's ({system}; "
            f"torch {release.version} needs {'–'.join(release.python_for(target.arch))})"
        )
    if target.secure_boot == "enabled" and driver.action != "keep" and not driver.signed_modules:
        out.append(
            "enroll a Machine Owner Key at the console on the next boot: Secure Boot is on and "
            "the DKMS-built module must be signed (needs console or BMC access)"
        )
    del table, os_row
    return tuple(out)


def _replacement(target: Target, driver: DriverPick) -> str:
    installed = target.driver
    assert installed is not None
    if installed.branch != driver.branch:
        return f"replace driver {installed.version} with R{driver.branch} ({driver.flavor} modules)"
    was = f", {installed.flavor} modules" if installed.flavor else ""
    return (
        f"switch the installed R{driver.branch} driver ({installed.version}{was}) to its "
        f"{driver.flavor} kernel modules ({driver.version}): the same branch, other modules"
    )


def notes(
    table: CompatTable, target: Target, os_row: OsRelease | None, driver: DriverPick
) -> list[str]:
    out = []
    # An unconfirmed OS row's note is listed with the other UNCONFIRMED facts instead.
    note = os_row.note if os_row and os_row.confirmed else None
    if os_row and os_row.standard_support_end < table.reviewed[:7]:
        detail = f" ({note})" if note else ""
        out.append(
            f"{os_row.label} left standard support in {os_row.standard_support_end}{detail}; "
            "plan a move to a supported release"
        )
    elif os_row and note:
        out.append(f"{os_row.label}: {note}")
    if driver.signed_modules:
        out.append(
            "Secure Boot is on: Canonical-signed prebuilt modules avoid MOK enrollment; "
            "they must exist for the running kernel"
        )
    if target.nvswitch and driver.action != "keep":
        out.append(
            f"NVSwitch present: nvidia-fabricmanager must match the driver version exactly (R{driver.branch})"
        )
    if target.wsl:
        out.append("WSL: never install a Linux driver inside WSL; the Windows driver provides CUDA")
    branch = table.branch(driver.branch)
    if branch and driver.action == "keep" and branch.eol < table.reviewed[:7]:
        out.append(
            f"R{branch.branch} reached end of life in {branch.eol}; plan an upgrade to a supported branch"
        )
    if driver.module_stream:
        out.append(f"dnf module stream {driver.module_stream} pins the branch")
    if driver.version_lock:
        out.append(
            f"dnf versionlock {driver.version_lock} holds the branch ({os_row.label if os_row else 'this release'} "
            "has no dnf module streams)"
        )
    if driver.source == debian_native.SOURCE:
        out.append(
            "Debian's own driver comes from non-free: the plan enables contrib, non-free and "
            "non-free-firmware first where they are missing, and Debian's updates keep it current"
        )
    return out
