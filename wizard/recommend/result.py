"""What the engine answers: a Recommendation or a Refusal, and the search behind it.

These are the engine's public vocabulary; ``gpuwizard recommend --json`` prints them through
``to_json_contract`` in the shape the command-line contract promises.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from gpuwizard.core.request import SetupRequest
from gpuwizard.recommend.os_support import OsRelease
from gpuwizard.recommend.rules import Candidate, DriverAction, DriverOption
from gpuwizard.recommend.table import Flavor, TorchRelease
from gpuwizard.recommend.target import Target

Status = Literal["ok", "ok_after_changes", "unsupported"]
PYTORCH_INDEX = "https://download.pytorch.org/whl"


@dataclass(frozen=True)
class Search:
    """A finished search: the winner (if any) and what the explanation needs."""

    target: Target
    os_row: OsRelease | None
    request: SetupRequest
    winner: Candidate | None
    closest: Candidate | None
    options: tuple[DriverOption, ...]
    releases: tuple[TorchRelease, ...]
    tried: tuple[Candidate, ...] = ()
    """Every candidate of every release tried, when none passed (for the refusal's cause)."""


@dataclass(frozen=True)
class GpuSummary:
    pci_id: str
    name: str
    arch: str
    compute_capability: str | None
    count: int


@dataclass(frozen=True)
class DriverPick:
    action: DriverAction
    branch: str
    version: str
    """What will run: the kept driver's version, or the branch's newest known release."""
    min_version: str
    """The oldest driver this combination of GPUs and CUDA build accepts."""
    flavor: Flavor | None
    packages: tuple[str, ...]
    source: str
    """ubuntu-archive, cuda-repo-apt, cuda-repo-dnf, or "host" when the driver is not ours."""
    module_stream: str | None = None
    signed_modules: bool = False
    core_packages: tuple[str, ...] = ()
    """The driver itself; ``packages`` adds the headers and Fabric Manager it needs here."""
    version_lock: str | None = None
    """RHEL 10 family: the dnf versionlock pattern that holds the branch (no module streams)."""


@dataclass(frozen=True)
class TorchPick:
    version: str
    variant: str
    index_url: str
    torchvision: str | None
    torchaudio: str | None
    confirmed: bool
    python_range: tuple[str, str] = ("3.10", "3.14")
    """Oldest and newest CPython this release has wheels for."""


@dataclass(frozen=True)
class PythonPick:
    version: str
    action: Literal["use_system", "install"]
    pinned: bool = False
    """Asked for by name: the planner installs exactly this one (from the OS's archive)."""


@dataclass(frozen=True)
class ToolkitPick:
    version: str
    packages: tuple[str, ...]


@dataclass(frozen=True)
class Rejected:
    option: str
    reason: str


@dataclass(frozen=True)
class Recommendation:
    status: Literal["ok", "ok_after_changes"]
    gpus: tuple[GpuSummary, ...]
    driver: DriverPick
    torch: TorchPick
    python: PythonPick
    cuda_toolkit: ToolkitPick | None
    changes: tuple[str, ...]
    reasons: tuple[str, ...]
    rejected: tuple[Rejected, ...]
    unconfirmed: tuple[str, ...]

    def resolved(self, request: SetupRequest) -> SetupRequest:
        """``request`` with every pin the engine reads set to what this recommendation picked."""
        d = self.driver
        return replace(
            request,
            torch=self.torch.version,
            variant=self.torch.variant,
            driver_branch=d.branch,
            driver_flavour=d.flavor,
            python=self.python.version,
            keep_driver=d.action == "keep",
        )


@dataclass(frozen=True)
class Refusal:
    reason: str
    gpus: tuple[GpuSummary, ...]
    reasons: tuple[str, ...] = ()
    rejected: tuple[Rejected, ...] = ()

    status: Literal["unsupported"] = "unsupported"


def to_json_contract(result: Recommendation | Refusal) -> dict[str, object]:
    """The stable ``recommend --json`` object (keys and meanings are checked from outside)."""
    gpus = [
        {
            "pci_id": g.pci_id,
            "name": g.name,
            "arch": g.arch,
            "compute_capability": g.compute_capability,
            "count": g.count,
        }
        for g in result.gpus
    ]
    rejected = [{"option": r.option, "reason": r.reason} for r in result.rejected]
    if isinstance(result, Refusal):
        return {
            "status": "unsupported",
            "reason": result.reason,
            "gpus": gpus,
            "driver": None,
            "torch": None,
            "python": None,
            "cuda_toolkit": None,
            "changes": [],
            "reasons": list(result.reasons),
            "rejected": rejected,
        }
    d, t = result.driver, result.torch
    return {
        "status": result.status,
        "gpus": gpus,
        "driver": {
            "action": d.action,
            "branch": d.branch,
            "version": d.version,
            "min_version": d.min_version,
            "flavor": d.flavor,
            "packages": list(d.packages),
            "source": d.source,
            "module_stream": d.module_stream,
            "signed_modules": d.signed_modules,
        },
        "torch": {
            "version": t.version,
            "variant": t.variant,
            "index_url": t.index_url,
            "torchvision": t.torchvision,
            "torchaudio": t.torchaudio,
            "confirmed": t.confirmed,
        },
        "python": {"version": result.python.version, "action": result.python.action},
        "cuda_toolkit": None
        if result.cuda_toolkit is None
        else {
            "version": result.cuda_toolkit.version,
            "packages": list(result.cuda_toolkit.packages),
        },
        "changes": list(result.changes),
        "reasons": list(result.reasons),
        "rejected": rejected,
        "unconfirmed": list(result.unconfirmed),
    }
