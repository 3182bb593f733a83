"""The driver and Python pins against one host: what they allow, and why one cannot be honoured.

``release_pins.py`` checks a pin against the table alone (a branch gpuwizard knows, a Python some
release ships wheels for), whatever the host. Here the host's OS row and installed driver
decide: a branch the OS does not offer, a driver the host does not own (WSL, a container), a
Python neither the OS ships nor its archive packages beside it. Each refusal is one line, the
same from the command line, an answers replay and the TUI. The GPU and CUDA-build fit of a
pinned branch or flavour are the rules' business (``rules.py``), like any other candidate's.

Pure: the table, the target and the request come in; it never searches.
"""

from __future__ import annotations

from gpuwizard.core.request import SetupRequest
from gpuwizard.recommend import debian_native
from gpuwizard.recommend.os_support import OsRelease
from gpuwizard.recommend.rules import DriverOption
from gpuwizard.recommend.table import CompatTable
from gpuwizard.recommend.target import Target


def offered_branches(table: CompatTable, os_row: OsRelease | None) -> tuple[str, ...]:
    """The branches gpuwizard installs on this OS, newest first (Debian's own among them)."""
    if os_row is None:
        return ()
    branches = [b for b in os_row.driver_branches if _installable(table, b)]
    branches += [o.branch for o in debian_native.options(os_row, "install")]
    return tuple(sorted(dict.fromkeys(branches), key=int, reverse=True))


def offered_pythons(target: Target, os_row: OsRelease | None) -> tuple[str, ...]:
    """The Pythons an environment can use here: the system's, the OS's python3, its extras."""
    found = [target.python] if target.python else []
    if os_row is not None:
        found += [os_row.python3, *os_row.extra_pythons]
    return tuple(dict.fromkeys(found))


def _installable(table: CompatTable, branch: str) -> bool:
    row = table.branch(branch)
    return row is not None and row.installable


def _driver_refusal(
    table: CompatTable, target: Target, os_row: OsRelease | None, request: SetupRequest
) -> str | None:
    branch = request.driver_branch
    if branch is None and request.driver_flavour is None:
        return None
    asked = f"R{branch}" if branch else f"the {request.driver_flavour} kernel modules"
    if target.driver_managed_elsewhere:
        owner = "Windows (WSL)" if target.wsl else f"the {target.container} container's host"
        return f"{asked} cannot be chosen here: the driver belongs to {owner}"
    kept = target.driver.flavor if target.driver else None
    if (
        request.keep_driver
        and request.driver_flavour
        and kept not in (request.driver_flavour, None)
    ):
        return f"{asked} and keeping the installed driver contradict each other: it has the {kept} ones"
    if branch is None:
        return None
    installed = target.driver.branch if target.driver else None
    if request.keep_driver and installed != branch:
        has = f"R{installed}" if installed else "no driver"
        return (
            f"R{branch} and keeping the installed driver contradict each other: this host has {has}"
        )
    offered = offered_branches(table, os_row)
    if branch == installed or branch in offered:
        return None
    where = os_row.label if os_row else "this OS"
    listed = ", ".join(f"R{b}" for b in offered) or "none"
    return f"R{branch} is not offered on {where}: gpuwizard installs {listed} there"


def _python_refusal(target: Target, os_row: OsRelease | None, request: SetupRequest) -> str | None:
    if request.python is None or os_row is None:
        return None
    offered = offered_pythons(target, os_row)
    if request.python in offered:
        return None
    return (
        f"Python {request.python} is not offered on {os_row.label}: it has "
        f"{', '.join(offered)} (gpuwizard installs only a Python the OS's archive packages)"
    )


def pin_refusal(
    table: CompatTable, target: Target, os_row: OsRelease | None, request: SetupRequest
) -> str | None:
    """Why the driver or Python pins cannot be honoured on this host, in one line; None: they can."""
    return _driver_refusal(table, target, os_row, request) or _python_refusal(
        target, os_row, request
    )


def allowed(option: DriverOption, request: SetupRequest) -> bool:
    """The pins allow this driver option (a kept driver of unknown flavour passes a flavour pin)."""
    if request.driver_branch is not None and option.branch != request.driver_branch:
        return False
    flavour = request.driver_flavour
    return flavour is None or option.flavor in (flavour, None)


def excluded_by_pin(option: DriverOption, request: SetupRequest) -> str | None:
    """Why an alternative the pins exclude was not chosen (None: the pins allow it)."""
    if request.driver_branch is not None and option.branch != request.driver_branch:
        return f"not the branch asked for (R{request.driver_branch})"
    if request.driver_flavour is not None and option.flavor not in (request.driver_flavour, None):
        return f"not the kernel modules asked for ({request.driver_flavour})"
    return None


def nothing_allowed(
    options: tuple[DriverOption, ...], request: SetupRequest, os_row: OsRelease | None
) -> str | None:
    """Why the driver pins leave no option at all here (R535 with open modules on Debian 12,
    where Debian's R535 has only the proprietary ones), naming what is offered; None when some
    option is allowed or nothing is pinned."""
    if not options or any(allowed(o, request) for o in options):
        return None
    if request.driver_branch is None and request.driver_flavour is None:
        return None
    asked = " ".join(
        p
        for p in (
            f"R{request.driver_branch}" if request.driver_branch else "",
            request.driver_flavour,
        )
        if p
    )
    where = os_row.label if os_row else "this host"
    offered = ", ".join(dict.fromkeys(_offer(o) for o in options))
    missing = [why for label, why in debian_native.not_offered(os_row) if asked in label]
    because = f" ({missing[0]})" if missing else ""
    return f"{asked} is not offered on {where}{because}: gpuwizard offers {offered} here"


def _offer(option: DriverOption) -> str:
    if option.action == "keep":
        return f"the installed {option.version}"
    return f"R{option.branch} {option.flavor or ''}".strip()
