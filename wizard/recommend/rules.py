"""The rules a candidate must pass, each a small pure function that says why not.

A rule returns None when the candidate passes, or one sentence in the user's words when it does
not ("cu130 builds of torch 2.14.1 have no kernels for Tesla V100 SXM2 16GB (sm_70)"). The
engine runs every rule on every candidate and shows the sentences for the alternatives it did
not choose.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from gpuwizard.core.gpus import GpuModel
from gpuwizard.core.version import Version, at_least, variant_cuda
from gpuwizard.recommend.os_support import match_os
from gpuwizard.recommend.table import CompatTable, Flavor, TorchRelease, WheelBuild
from gpuwizard.recommend.target import Target

DriverAction = Literal["install", "keep", "upgrade"]
DEBIAN_ARCHIVE = "debian-archive"
"""The source of Debian's own driver (recommend.debian_native)."""
THIRD_PARTY = ("cuda-repo-apt", "cuda-repo-dnf")
"""Driver sources that are a repository the OS does not ship: NVIDIA's."""


@dataclass(frozen=True)
class DriverOption:
    action: DriverAction
    branch: str
    version: str
    """The version that will run: the installed one (keep) or the branch's newest (install)."""
    flavor: Flavor | None
    source: str | None = None
    """Where it comes from (the OS row's driver source, or Debian's archive); None: kept."""

    @property
    def label(self) -> str:
        if self.action == "keep":
            return f"keep driver {self.version}"
        flavor = f" {self.flavor}" if self.flavor else ""
        where = " from Debian's archive" if self.source == DEBIAN_ARCHIVE else ""
        return f"{'upgrade to' if self.action == 'upgrade' else 'install'} R{self.branch}{flavor}{where}"


@dataclass(frozen=True)
class Candidate:
    torch: TorchRelease
    variant: str
    build: WheelBuild | None
    driver: DriverOption
    python: str | None = None
    """The environment's Python when the person pinned one (None: the engine picks one)."""


Rule = Callable[[CompatTable, Target, Candidate], "str | None"]


@functools.lru_cache(maxsize=1024)  # the engine asks the same few builds and GPUs very often
def covers(arches: tuple[str, ...], compute_capability: str) -> bool:
    """A build serves a GPU with a listed capability, or a lower minor of the same major [S28]."""
    major, minor = (int(p) for p in compute_capability.split("."))
    return any(int(a.split(".")[0]) == major and int(a.split(".")[1]) <= minor for a in arches)


@functools.lru_cache(maxsize=256)
def _sm_range(arches: tuple[str, ...]) -> str:
    tags = [f"sm_{a.replace('.', '')}" for a in arches]
    return f"{tags[0]}–{tags[-1]}" if len(tags) > 1 else tags[0]


def wheel_exists(table: CompatTable, target: Target, c: Candidate) -> str | None:
    del table
    if c.build is None:
        return f"torch {c.torch.version} has no {c.variant} build for {target.arch}"
    return None


def wheel_has_kernels(table: CompatTable, target: Target, c: Candidate) -> str | None:
    del table
    if c.build is None:
        return None
    missing = [
        g
        for g in _unique(target.gpus)
        if g.compute_capability and not covers(c.build.arches, g.compute_capability)
    ]
    if not missing:
        return None
    names = ", ".join(f"{g.name} ({g.sm})" for g in missing)
    shipped = _sm_range(c.build.arches)
    return f"{c.variant} builds of torch {c.torch.version} have no kernels for {names}: they ship {shipped}"


def driver_floor_for(table: CompatTable, gpu: GpuModel, flavor: Flavor | None = None) -> str | None:
    """The oldest driver known to support a GPU (with a flavour's kernel modules, when given).

    The newest of: the architecture's floor, a vendor's stated minimum for the model, and the
    first release whose NVIDIA list names the model for that flavour (``gpu_listings``; with no
    flavour, the earlier of the two lists).
    """
    floors = [f for f in (_arch_floor(table, gpu), _model_floor(table, gpu)) if f]
    listing = table.gpu_listing(gpu.device_id)
    if listing is not None:
        named = [listing.first(f) for f in ((flavor,) if flavor else ("open", "proprietary"))]
        firsts = [f for f in named if f]
        floors += [min(firsts, key=Version.parse)] if firsts else []
    return max(floors, key=Version.parse) if floors else None


def _model_floor(table: CompatTable, gpu: GpuModel) -> str | None:
    model = next((r for r in table.model_driver_floors if r.device_id == gpu.device_id), None)
    return model.min_driver if model else None


def _arch_floor(table: CompatTable, gpu: GpuModel) -> str | None:
    arch = next(
        (r for r in table.gpu_driver_floors if r.compute_capability == gpu.compute_capability), None
    )
    return arch.min_driver if arch else None


def last_branch_for(table: CompatTable, gpu: GpuModel) -> str | None:
    """The newest branch that supports the GPU: its NVIDIA lists' where the table says, else its chip's."""
    listing = table.gpu_listing(gpu.device_id)
    return (listing.last_branch if listing else None) or gpu.last_driver_branch


def driver_supports_gpus(table: CompatTable, target: Target, c: Candidate) -> str | None:
    for gpu in _unique(target.gpus):
        last = last_branch_for(table, gpu)
        if last and int(c.driver.branch) > int(last):
            branch = c.driver.branch
            return f"R{branch} does not support {gpu.name} ({gpu.arch}): {_last_clause(table, gpu, last)}"
        floor = driver_floor_for(table, gpu, c.driver.flavor)
        if floor and not at_least(c.driver.version, floor):
            modules = f" with the {c.driver.flavor} kernel modules" if c.driver.flavor else ""
            return f"driver {c.driver.version} is too old for {gpu.name}{modules}: it needs {floor} or newer"
    return None


def _last_clause(table: CompatTable, gpu: GpuModel, last: str) -> str:
    listing = table.gpu_listing(gpu.device_id)
    if listing and listing.last_branch:
        return f"R{last} is the last branch whose list of supported GPUs names it"
    return f"R{last} is the last branch for {gpu.arch}"


def driver_runs_wheel(table: CompatTable, target: Target, c: Candidate) -> str | None:
    del target
    cuda = variant_cuda(c.variant)
    floor = table.driver_floor(cuda)
    if floor and not at_least(c.driver.version, floor):
        major = cuda.split(".")[0]
        return f"{c.variant} (CUDA {cuda}) needs driver {floor} or newer for CUDA {major}; {c.driver.version} is older"
    return None


def flavor_fits_gpus(table: CompatTable, target: Target, c: Candidate) -> str | None:
    flavor = c.driver.flavor
    branch = table.branch(c.driver.branch)
    if flavor is None:
        return None
    if branch and not getattr(branch, flavor):
        return f"R{c.driver.branch} has no {flavor} kernel modules"
    for gpu in _unique(target.gpus):
        if flavor == "proprietary" and gpu.open_modules == "required":
            return f"{gpu.name} ({gpu.arch}) requires the open kernel modules"
        if flavor == "open" and gpu.open_modules == "unsupported":
            return f"{gpu.name} ({gpu.arch}) cannot use the open kernel modules; it needs the proprietary ones"
        if flavor == "open" and not _open_listed(table, gpu):
            return f"no release of NVIDIA's open kernel modules lists {gpu.name}; it needs the proprietary ones"
    return None


def _open_listed(table: CompatTable, gpu: GpuModel) -> bool:
    """The open modules' README names the GPU in some release (a GPU the table has no row for
    is taken at its chip's word: Turing and later)."""
    listing = table.gpu_listing(gpu.device_id)
    return listing is None or listing.open is not None


def wheel_for_python(table: CompatTable, target: Target, c: Candidate) -> str | None:
    """A pinned Python needs a wheel of the release for it on this platform (PyPI's range)."""
    del table
    if c.python is None:
        return None
    low, high = c.torch.python_for(target.arch)
    if Version.parse(low) <= Version.parse(c.python) <= Version.parse(high):
        return None
    return (
        f"torch {c.torch.version} has no wheels for Python {c.python} on {target.arch} "
        f"(it supports {low}–{high})"
    )


def toolkit_available(table: CompatTable, target: Target, c: Candidate) -> str | None:
    """Only asked when nvcc is wanted: NVIDIA must publish that CUDA for this OS."""
    os_row = match_os(table, target.os_id or "", target.os_version or "")
    cuda = variant_cuda(c.variant)
    if (
        os_row
        and os_row.cuda_repo_max
        and Version.parse(cuda) > Version.parse(os_row.cuda_repo_max)
    ):
        return f"NVIDIA publishes no CUDA {cuda} toolkit for {os_row.label} (its newest is {os_row.cuda_repo_max})"
    return None


def source_serves_host(table: CompatTable, target: Target, c: Candidate) -> str | None:
    """Debian's archive has no Fabric Manager, which NVSwitch systems need."""
    del table
    if c.driver.source == DEBIAN_ARCHIVE and target.nvswitch:
        return "NVSwitch systems need nvidia-fabricmanager, which only NVIDIA's repository has"
    return None


RULES: tuple[Rule, ...] = (
    wheel_exists,
    wheel_has_kernels,
    wheel_for_python,
    flavor_fits_gpus,
    driver_supports_gpus,
    driver_runs_wheel,
    source_serves_host,
)


def rules_for(needs_nvcc: bool) -> tuple[Rule, ...]:
    return (*RULES, toolkit_available) if needs_nvcc else RULES


def failures(
    table: CompatTable, target: Target, c: Candidate, needs_nvcc: bool = False
) -> list[str]:
    return [reason for rule in rules_for(needs_nvcc) if (reason := rule(table, target, c))]


def _unique(models: tuple[GpuModel, ...]) -> list[GpuModel]:
    seen: dict[str, GpuModel] = {}
    for model in models:
        seen.setdefault(model.device_id, model)
    return list(seen.values())
