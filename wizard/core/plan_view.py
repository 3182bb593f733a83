"""What a step will change, in words: packages, files, services, reboots. Pure.

The review screen and the exports read the same plan; this turns a step's actions into the
blast radius a person checks before saying yes.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.ops import (
    AptFixBroken,
    AptHold,
    AptInstall,
    AptUpdate,
    AptUpgrade,
    Command,
    CondaCreate,
    DnfInstall,
    DnfModuleEnable,
    DnfUpgrade,
    DnfVersionLock,
    Download,
    DpkgConfigure,
    MiniforgeInstall,
    PipDownload,
    PipInstall,
    Reboot,
    Service,
    UvPipInstall,
    UvPythonInstall,
    UvVenv,
    Venv,
)
from gpuwizard.core.plan import Action, StepPlan, WriteFile, assert_never


@dataclass(frozen=True)
class Changes:
    packages: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    services: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    """Other commands that change the system."""
    reboot: bool = False


def changes(step: StepPlan) -> Changes:
    found: dict[str, list[str]] = {"packages": [], "files": [], "services": [], "commands": []}
    for action in step.actions:
        kind, words = _change(action)
        if kind is not None:
            found[kind] += words
    return Changes(
        tuple(found["packages"]),
        tuple(found["files"]),
        tuple(found["services"]),
        tuple(found["commands"]),
        step.reboot,
    )


def _change(action: Action) -> tuple[str | None, tuple[str, ...]]:  # noqa: RET503 - exhaustive
    """Which kind of change an operation is, and what it names; refreshing lists changes nothing."""
    match action:
        case WriteFile():
            return "files", (action.path,)
        case AptInstall() | DnfInstall():
            return "packages", action.packages
        case Service(verb="enable" | "restart"):
            return "services", (action.unit,)
        case AptUpdate():
            return None, ()
        case AptUpgrade() | AptHold() | DpkgConfigure() | AptFixBroken() | Service() | Reboot():
            return "commands", (action.display(),)
        case DnfUpgrade() | DnfModuleEnable() | DnfVersionLock() | Download() | Command():
            return "commands", (action.display(),)
        case PipInstall() | PipDownload() | Venv() | UvVenv() | UvPythonInstall():
            return "commands", (action.display(),)
        case UvPipInstall() | CondaCreate() | MiniforgeInstall():
            return "commands", (action.display(),)
        case _:  # pragma: no cover - exhaustive
            assert_never(action)


def describe(step: StepPlan) -> str:
    """One line: "packages: a b; files: /etc/x; services: y; reboot"."""
    found = changes(step)
    parts = []
    if found.packages:
        parts.append("packages: " + " ".join(found.packages))
    if found.files:
        parts.append("files: " + " ".join(found.files))
    if found.services:
        parts.append("services: " + " ".join(found.services))
    if found.reboot:
        parts.append("reboots the machine")
    elif step.needs_reboot:
        parts.append("takes effect after the reboot")
    if not parts and found.commands:
        parts.append(f"runs {len(found.commands)} command{'' if len(found.commands) == 1 else 's'}")
    return "; ".join(parts) or "nothing to do"
