"""What a step will change, in words: packages, files, services, reboots. Pure.

The review screen and the exports read the same plan; this turns a step's actions into the
blast radius a person checks before saying yes.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.plan import Run, StepPlan, WriteFile

_INSTALLERS = {("apt-get", "install"), ("dnf", "install")}


@dataclass(frozen=True)
class Changes:
    packages: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    services: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    """Other commands that change the system."""
    reboot: bool = False


def _installed(run: Run) -> tuple[str, ...]:
    for tool, verb in _INSTALLERS:
        if run.argv[0] == tool and verb in run.argv:
            return tuple(a for a in run.argv[run.argv.index(verb) + 1 :] if not a.startswith("-"))
    return ()


def changes(step: StepPlan) -> Changes:
    packages: list[str] = []
    files: list[str] = []
    services: list[str] = []
    commands: list[str] = []
    for action in step.actions:
        if isinstance(action, WriteFile):
            files.append(action.path)
        elif installed := _installed(action):
            packages += installed
        elif action.argv[:2] in (("systemctl", "enable"), ("systemctl", "restart")):
            services += action.argv[2:]
        elif action.argv[-1:] != ("update",):
            commands.append(action.display())
    return Changes(tuple(packages), tuple(files), tuple(services), tuple(commands), step.reboot)


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
        parts.append(f"runs {len(found.commands)} command(s)")
    return "; ".join(parts) or "nothing to do"
