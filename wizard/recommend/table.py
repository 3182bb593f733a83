"""Load and validate compat.yaml into frozen data.

Validation happens once, at load: types (through the strict codec), then meaning: every source
has an address and the date it was checked, every row cites sources that exist, versions look
like versions, the CUDA builds a release names and the build rows agree both ways (per platform),
every branch an OS offers is a known branch. A bad row raises ``CompatTableError`` naming the
row, so it fails the tests instead of a user's install. This module reads only its own files.

compat.yaml is for people (comments, sources beside the rows); compat.json beside it is the same
table compiled for the machine (``tools/compile_compat.py``), stamped with the length and CRC-32
of the YAML it came from. Loading prefers it when the stamp matches: no YAML parser on the way
(PyYAML's import alone costs `detect` about 20 ms), and a stale or missing compiled copy is never
used, so an edit to compat.yaml takes effect at once and a test says to compile again.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from gpuwizard.core.codec import CodecError, from_jsonable, to_jsonable
from gpuwizard.core.version import Version, is_cuda_variant, variant_cuda
from gpuwizard.recommend.os_support import OsRelease, compiled_data, source_digest

Flavor = Literal["open", "proprietary"]
K = TypeVar("K")
R = TypeVar("R")

_VERSION = re.compile(r"[0-9]+(\.[0-9]+)*")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class CompatTableError(ValueError):
    """compat.yaml is malformed; the message names the row."""


@dataclass(frozen=True)
class Source:
    """Where a fact was read, and when: rows cite these by key."""

    title: str
    address: str
    """A page, an index or a repository file (with its commit) that a reader can open."""
    checked: str
    """The date (YYYY-MM-DD) the source was read for this table."""


@dataclass(frozen=True)
class DriverBranch:
    branch: str
    designation: Literal["LTSB", "PB", "NFB"]
    eol: str
    """Year-month the branch leaves support, e.g. "2028-06"."""
    max_cuda: str
    open: bool
    proprietary: bool
    latest: str | None
    installable: bool
    sources: tuple[str, ...]
    note: str | None = None
    confirmed: bool = True


@dataclass(frozen=True)
class CudaRelease:
    cuda: str
    ga_driver: str
    sources: tuple[str, ...]
    confirmed: bool = True


@dataclass(frozen=True)
class MinorVersionCompat:
    cuda_major: str
    min_driver: str
    sources: tuple[str, ...]
    confirmed: bool = True


@dataclass(frozen=True)
class ArchDriverFloor:
    compute_capability: str
    min_driver: str
    sources: tuple[str, ...]
    confirmed: bool = True


@dataclass(frozen=True)
class ModelDriverFloor:
    device_id: str
    name: str
    min_driver: str
    sources: tuple[str, ...]
    confirmed: bool = True


@dataclass(frozen=True)
class GpuListing:
    """The first driver release whose NVIDIA list of supported GPUs names a device, per flavour.

    ``tools/check_compat.py`` reads the lists (``wizard/recommend/gpu_lists.py``) and fails when a
    row disagrees with them. A driver older than the first listing is not known to support the
    GPU with that flavour; the engine takes it as the GPU's floor.
    """

    device_id: str
    name: str
    open: str | None
    """The first release whose open-kernel-module README names it; None: no release does."""
    proprietary: str | None
    """The first release read whose README Appendix A names it; None: none of those read."""
    sources: tuple[str, ...]
    open_gaps: tuple[str, ...] = ()
    """Branches with a release, after the first listing, whose open-module list leaves it out."""
    proprietary_gaps: tuple[str, ...] = ()
    """Branches with a release, after the first listing, whose Appendix A leaves it out."""
    last_branch: str | None = None
    """The last branch whose lists name it, where that is not its chip's (gpus.CHIP_RULES)."""
    integrated: bool = False
    """An integrated GPU (Jetson): its driver and CUDA come with JetPack; gpuwizard refuses it."""
    confirmed: bool = True
    """False where the lists disagree (some release after the first listing leaves it out), or
    where they could not say (the note says why)."""
    note: str | None = None

    def gaps(self, flavour: Flavor) -> tuple[str, ...]:
        return self.open_gaps if flavour == "open" else self.proprietary_gaps

    def first(self, flavour: Flavor) -> str | None:
        return self.open if flavour == "open" else self.proprietary


@dataclass(frozen=True)
class WheelBuild:
    variant: str
    cuda: str
    torch: tuple[str, str]
    """First and last torch release with this build and this architecture list."""
    platform: Literal["x86_64", "aarch64"]
    arches: tuple[str, ...]
    sources: tuple[str, ...]
    confirmed: bool = True
    """True when the list was read from the wheels themselves; False when it comes from build
    scripts or release notes (the install verifies it)."""
    note: str | None = None


@dataclass(frozen=True)
class TorchRelease:
    version: str
    released: str
    python: tuple[str, str]
    """Oldest and newest CPython minor with Linux x86_64 wheels on PyPI."""
    variants: tuple[str, ...]
    """The x86_64 CUDA builds on the wheel index (https://download.pytorch.org/whl/<variant>)."""
    default: str
    """The CUDA build a plain `pip install torch` gets from PyPI on Linux x86_64."""
    torchvision: str | None
    torchaudio: str | None
    sources: tuple[str, ...]
    experimental: tuple[str, ...] = ()
    aarch64: tuple[str, ...] = ()
    """The aarch64 (SBSA: Grace) CUDA builds on the wheel index; empty when there were none."""
    aarch64_default: str | None = None
    """What PyPI's Linux aarch64 wheel is: a CUDA build, "cpu", or None when PyPI has none."""
    aarch64_python: tuple[str, str] | None = None
    """The aarch64 wheels' CPython range on PyPI, when it differs from ``python``."""
    default_bundled: bool = False
    """PyPI's x86_64 wheel carries its CUDA inside, so its metadata names no CUDA package."""
    confirmed: bool = True
    note: str | None = None

    def builds_for(self, platform: str) -> tuple[str, ...]:
        return self.aarch64 if platform == "aarch64" else self.variants

    def python_for(self, platform: str) -> tuple[str, str]:
        """The CPython range of this release's wheels on a platform."""
        return (self.aarch64_python or self.python) if platform == "aarch64" else self.python

    def pypi_default(self, platform: str) -> str | None:
        """PyPI's CUDA build for a platform, or None when its wheel there has no CUDA."""
        default = self.aarch64_default if platform == "aarch64" else self.default
        return default if default and default.startswith("cu") else None


@dataclass(frozen=True)
class PackageNames:
    open: tuple[str, ...]
    proprietary: tuple[str, ...]
    fabricmanager: tuple[str, ...]
    headers: tuple[str, ...]
    toolkit: tuple[str, ...]
    sources: tuple[str, ...]
    signed_open: tuple[str, ...] = ()
    signed_proprietary: tuple[str, ...] = ()
    module_stream: dict[str, str] | None = None
    version_lock: str | None = None
    """Where there are no module streams: the dnf versionlock pattern that holds the branch."""
    confirmed: bool = True


@dataclass(frozen=True)
class CompatTable:
    schema: int
    reviewed: str
    latest_policy: str
    """Which release "latest" means, in words (the engine applies it; the docs quote it)."""
    sources: dict[str, Source]
    drivers: tuple[DriverBranch, ...]
    cuda_releases: tuple[CudaRelease, ...]
    minor_version_compatibility: tuple[MinorVersionCompat, ...]
    gpu_driver_floors: tuple[ArchDriverFloor, ...]
    model_driver_floors: tuple[ModelDriverFloor, ...]
    gpu_listings: tuple[GpuListing, ...]
    wheel_builds: tuple[WheelBuild, ...]
    torch_releases: tuple[TorchRelease, ...]
    operating_systems: tuple[OsRelease, ...]
    packages: dict[str, PackageNames]

    # Lookups by key. The table is frozen, so each index is built once, on first use (the engine
    # asks these a few hundred times per answer; a scan of the rows made it 4x slower).

    @functools.cached_property
    def _torch_index(self) -> dict[str, TorchRelease]:
        return _first_by(self.torch_releases, lambda r: r.version)

    @functools.cached_property
    def _branch_index(self) -> dict[str, DriverBranch]:
        return _first_by(self.drivers, lambda d: d.branch)

    @functools.cached_property
    def _listing_index(self) -> dict[str, GpuListing]:
        return _first_by(self.gpu_listings, lambda g: g.device_id)

    @functools.cached_property
    def _cuda_index(self) -> dict[str, CudaRelease]:
        return _first_by(self.cuda_releases, lambda c: c.cuda)

    @functools.cached_property
    def _build_index(
        self,
    ) -> dict[tuple[str, str], tuple[tuple[Version, Version, WheelBuild], ...]]:
        rows: dict[tuple[str, str], list[tuple[Version, Version, WheelBuild]]] = {}
        for b in self.wheel_builds:
            bounds = (Version.parse(b.torch[0]), Version.parse(b.torch[1]), b)
            rows.setdefault((b.variant, b.platform), []).append(bounds)
        return {key: tuple(found) for key, found in rows.items()}

    def torch(self, version: str) -> TorchRelease | None:
        return self._torch_index.get(version)

    def branch(self, branch: str) -> DriverBranch | None:
        return self._branch_index.get(branch)

    def os_release(self, os_id: str, version: str) -> OsRelease | None:
        return next(
            (o for o in self.operating_systems if o.id == os_id and o.version == version), None
        )

    def newest_driver(self, branch: DriverBranch, os_row: OsRelease | None) -> str | None:
        """The version a fresh install of the branch gets on this OS."""
        own = (os_row.driver_versions or {}).get(branch.branch) if os_row else None
        return own or branch.latest

    def gpu_listing(self, device_id: str) -> GpuListing | None:
        return self._listing_index.get(device_id)

    def cuda(self, cuda: str) -> CudaRelease | None:
        return self._cuda_index.get(cuda)

    def build(self, variant: str, torch: str, platform: str) -> WheelBuild | None:
        """The build row for a release's variant on a platform, when the release lists it."""
        release = self.torch(torch)
        if release is not None and variant not in release.builds_for(platform):
            return None
        return self._build_row(variant, torch, platform)

    def _build_row(self, variant: str, torch: str, platform: str) -> WheelBuild | None:
        version = Version.parse(torch)
        rows = self._build_index.get((variant, platform), ())
        return next((b for low, high, b in rows if low <= version <= high), None)

    def mvc_floor(self, cuda: str) -> str | None:
        major = cuda.split(".")[0]
        row = next((m for m in self.minor_version_compatibility if m.cuda_major == major), None)
        return row.min_driver if row else None

    def driver_floor(self, cuda: str) -> str | None:
        """The oldest driver that runs a CUDA build: the major's minor-version-compatibility
        floor, or the toolkit's GA driver where the major has none (CUDA 10) [S8][S9]."""
        floor = self.mvc_floor(cuda)
        if floor is not None:
            return floor
        ga = self.cuda(cuda)
        return ga.ga_driver if ga else None


def _first_by(rows: tuple[R, ...], key: Callable[[R], K]) -> dict[K, R]:
    """Rows by a key; the first row wins where two share one (as a scan from the top finds)."""
    found: dict[K, R] = {}
    for row in rows:
        found.setdefault(key(row), row)
    return found


def _check(condition: bool, where: str, message: str) -> None:
    if not condition:
        raise CompatTableError(f"compat.yaml {where}: {message}")


def _check_versions(where: str, *versions: str | None) -> None:
    for version in versions:
        _check(
            version is None or bool(_VERSION.fullmatch(version)), where, f"bad version {version!r}"
        )


def _check_sources(table: CompatTable) -> None:
    for key, source in table.sources.items():
        where = f"sources[{key}]"
        _check(bool(source.address.strip()), where, "needs an address a reader can open")
        _check(bool(_DATE.fullmatch(source.checked)), where, "checked: not a date (YYYY-MM-DD)")
        _check(source.checked <= table.reviewed, where, "checked after the table was reviewed")
    rows: list[tuple[str, tuple[str, ...]]] = [
        *((f"drivers[{r.branch}]", r.sources) for r in table.drivers),
        *((f"cuda_releases[{r.cuda}]", r.sources) for r in table.cuda_releases),
        *((f"torch_releases[{r.version}]", r.sources) for r in table.torch_releases),
        *((f"wheel_builds[{r.variant} {r.torch}]", r.sources) for r in table.wheel_builds),
        *((f"operating_systems[{r.id} {r.version}]", r.sources) for r in table.operating_systems),
        *(
            (f"gpu_driver_floors[{r.compute_capability}]", r.sources)
            for r in table.gpu_driver_floors
        ),
        *((f"model_driver_floors[{r.device_id}]", r.sources) for r in table.model_driver_floors),
        *((f"gpu_listings[{r.device_id}]", r.sources) for r in table.gpu_listings),
        *((f"packages[{k}]", r.sources) for k, r in table.packages.items()),
    ]
    for where, keys in rows:
        _check(bool(keys), where, "cites no source")
        for key in keys:
            _check(key in table.sources, where, f"cites unknown source {key!r}")


def _check_release(table: CompatTable, release: TorchRelease) -> None:
    where = f"torch_releases[{release.version}]"
    _check_versions(where, release.version, release.torchvision, release.torchaudio)
    _check_versions(where, *release.python, *(release.aarch64_python or ()))
    _check(release.default in release.variants, where, "default is not one of its variants")
    _check(
        not release.confirmed or release.torchvision is not None,
        where,
        "a confirmed release needs its torchvision pair",
    )
    pypi_arm = release.aarch64_default
    _check(
        pypi_arm in (None, "cpu") or pypi_arm in release.aarch64,
        where,
        f"aarch64_default {pypi_arm} is not one of its aarch64 builds",
    )
    for platform in ("x86_64", "aarch64"):
        for variant in release.builds_for(platform):
            _check(is_cuda_variant(variant), where, f"bad variant {variant!r}")
            _check(
                table._build_row(variant, release.version, platform) is not None,
                where,
                f"no wheel_builds row for {variant} on {platform}",
            )
            _check(
                table.cuda(variant_cuda(variant)) is not None, where, f"no cuda row for {variant}"
            )


def _check_builds_are_listed(table: CompatTable) -> None:
    """A build row's range must not claim a release that does not list that build."""
    for build in table.wheel_builds:
        low, high = (Version.parse(v) for v in build.torch)
        for release in table.torch_releases:
            inside = low <= Version.parse(release.version) <= high
            _check(
                not inside or build.variant in release.builds_for(build.platform),
                f"wheel_builds[{build.variant} {build.platform} {build.torch[0]}-{build.torch[1]}]",
                f"torch {release.version} is in its range but does not list {build.variant}",
            )


def validate(table: CompatTable) -> CompatTable:
    _check(table.schema == 1, "schema", f"expected 1, got {table.schema}")
    _check(bool(_DATE.fullmatch(table.reviewed)), "reviewed", "not a date")
    _check(bool(table.latest_policy.strip()), "latest_policy", "say which release latest means")
    _check_sources(table)
    for release in table.torch_releases:
        _check_release(table, release)
    _check_builds_are_listed(table)
    versions = [r.version for r in table.torch_releases]
    _check(len(versions) == len(set(versions)), "torch_releases", "duplicate version")
    branches = {d.branch for d in table.drivers}
    for os_release in table.operating_systems:
        where = f"operating_systems[{os_release.id} {os_release.version}]"
        _check(os_release.driver_source in table.packages, where, "unknown driver_source")
        for branch in os_release.driver_branches:
            _check(branch in branches, where, f"unknown driver branch {branch}")
        for branch, version in (os_release.driver_versions or {}).items():
            _check(branch in os_release.driver_branches, where, f"R{branch} is not offered here")
            _check_versions(where, version)
            _check(version.split(".")[0] == branch, where, f"{version} is not an R{branch} driver")
    for driver in table.drivers:
        _check_versions(f"drivers[{driver.branch}]", driver.branch, driver.latest, driver.max_cuda)
    _check_listings(table)
    return table


def _check_listings(table: CompatTable) -> None:
    ids = [g.device_id for g in table.gpu_listings]
    _check(len(ids) == len(set(ids)), "gpu_listings", "a device is listed twice")
    for row in table.gpu_listings:
        where = f"gpu_listings[{row.device_id}]"
        _check(bool(re.fullmatch(r"[0-9a-f]{4}", row.device_id)), where, "device_id: 4 hex digits")
        _check_versions(where, row.open, row.proprietary, row.last_branch)
        _check_versions(where, *row.open_gaps, *row.proprietary_gaps)
        gaps = bool(row.open_gaps or row.proprietary_gaps)
        _check(not (gaps and row.confirmed), where, "lists with gaps make it confirmed: false")
        _check(row.confirmed or bool(row.note), where, "say in a note what is UNCONFIRMED")


def parse_table(text: str) -> CompatTable:
    import yaml  # only when the compiled copy is stale or missing, and for the checks

    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as error:
        raise CompatTableError(f"compat.yaml is not valid YAML: {error}") from None
    try:
        table = from_jsonable(CompatTable, data, "compat.yaml")
    except CodecError as error:
        raise CompatTableError(str(error)) from None
    return validate(table)


def compile_table(text: str) -> str:
    """The compiled form of compat.yaml's text: its validated data, stamped with the text's digest."""
    data = {"compiled_from": source_digest(text), "table": to_jsonable(parse_table(text))}
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def compiled_table(compiled: str, text: str) -> CompatTable | None:
    """The table from its compiled form, or None when that was compiled from another text."""
    data = compiled_data(compiled, text)
    if data is None:
        return None
    try:
        return validate(from_jsonable(CompatTable, data, "compat.json"))
    except CodecError as error:
        raise CompatTableError(str(error)) from None


@functools.cache
def load_table() -> CompatTable:
    """The shipped table, validated once per process: compiled when that copy is current."""
    here = Path(__file__)
    text = here.with_name("compat.yaml").read_text(encoding="utf-8")
    try:
        compiled = here.with_name("compat.json").read_text(encoding="utf-8")
    except FileNotFoundError:
        return parse_table(text)
    return compiled_table(compiled, text) or parse_table(text)
