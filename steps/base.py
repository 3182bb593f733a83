"""What a step is, and the builders every step shares (apt/dnf, downloads, services).

A step is a pure declaration over HostFacts: ``check`` says whether the host is already in the
step's end state, ``plan`` lists the typed operations (``wizard/core/ops.py``) that get it there
(empty exactly when ``check`` holds), ``verify`` judges fresh facts after them (and after the
reboot when ``needs_reboot``). Steps never read the machine and never run anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from gpuwizard.core.download_pins import pin_for
from gpuwizard.core.facts import HostFacts
from gpuwizard.core.ops import (
    AptInstall,
    AptUpdate,
    DnfInstall,
    Download,
    DownloadCheck,
    Fingerprint,
    NoPin,
    Program,
    Service,
    Sha256,
)
from gpuwizard.core.plan import Action, StepPlan, Target


@dataclass(frozen=True)
class Check:
    satisfied: bool
    reason: str
    """In the user's words: "nouveau is still loaded" / "R580 open driver packages installed"."""


class PlanError(ValueError):
    """The step cannot be planned safely on this host (e.g. an invalid daemon.json)."""


class Step(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def why(self) -> str: ...
    @property
    def needs_reboot(self) -> bool: ...
    @property
    def reboot(self) -> bool: ...
    @property
    def targets(self) -> tuple[Target, ...]: ...

    def check(self, facts: HostFacts) -> Check: ...
    def plan(self, facts: HostFacts) -> tuple[Action, ...]: ...
    def verify(self, facts: HostFacts) -> Check: ...


@dataclass(frozen=True)
class Cost:
    download_mib: int = 0
    minutes: float = 0


def step_plan(step: Step, facts: HostFacts, cost: Cost = Cost()) -> StepPlan:
    """The reviewed form of a step on these facts."""
    return StepPlan(
        id=step.id,
        title=step.title,
        why=step.why,
        actions=step.plan(facts),
        needs_reboot=step.needs_reboot,
        reboot=step.reboot,
        targets=step.targets,
        download_mib=cost.download_mib,
        minutes=cost.minutes,
    )


def apt_update() -> AptUpdate:
    return AptUpdate()


def apt_install(
    packages: Sequence[str], *, update: bool = True, recommends: bool = True
) -> tuple[Program, ...]:
    """Non-interactive, waiting for the dpkg lock, keeping local config files (ARCHITECTURE S5).

    ``recommends=False`` adds ``--no-install-recommends``: a step that says why in its own text.
    """
    install = AptInstall(tuple(packages), recommends=recommends)
    return (apt_update(), install) if update else (install,)


def dnf_install(packages: Sequence[str]) -> tuple[Program, ...]:
    return (DnfInstall(tuple(packages)),)


def install_packages(family: str, packages: Sequence[str]) -> tuple[Program, ...]:
    return apt_install(packages) if family == "debian" else dnf_install(packages)


def fetch(
    url: str,
    destination: str,
    *,
    arch: str | None = None,
    member: str | None = None,
    dearmor: bool = False,
    armor: bool = False,
) -> Download:
    """Download to a file, atomically, checked against its pin in gpuwizard's data
    (``wizard/core/download_pins.py``): a file's SHA-256, a key's fingerprint; a mismatch deletes the file and
    fails the step. A file download_pins.yaml marks UNCONFIRMED is fetched over HTTPS alone, with a warning.
    A repository key is stored as the checked key alone: ``dearmor`` for apt's ``signed-by``,
    ``armor`` for dnf's ``gpgkey`` (both mark a key whose fingerprint is UNCONFIRMED as a key).

    Raises:
        Unpinned: download_pins.yaml has no entry for the URL (every plan is checked for this in the tests).
    """
    pin = pin_for(url, arch)
    check: DownloadCheck = (
        Sha256(pin.sha256)
        if pin.sha256
        else Fingerprint(pin.fingerprint)
        if pin.fingerprint
        else NoPin()
    )
    return Download(url, destination, check, member=member or None, dearmor=dearmor, armor=armor)


def unconfirmed_note(url: str, arch: str | None = None) -> str:
    """A sentence for a step's why when its download has no confirmed pin, else empty."""
    pin = pin_for(url, arch)
    if pin.confirmed:
        return ""
    return (
        f" UNCONFIRMED: gpuwizard has no official checksum for {url.rsplit('/', 1)[-1]}, so it is "
        "trusted on HTTPS alone (gpuwizard-fetch warns when it downloads it)."
    )


def missing(facts: HostFacts, packages: Iterable[str]) -> list[str]:
    installed = {p.name for p in facts.installs.packages}
    return [p for p in packages if p not in installed]


def enable_service(unit: str) -> Service:
    return Service("enable", unit)


def done_when(satisfied: bool, yes: str, no: str) -> Check:
    return Check(satisfied, yes if satisfied else no)
