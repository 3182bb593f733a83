"""Debian's own NVIDIA driver as a driver source beside NVIDIA's repository.

On Debian it is the only driver that needs no third-party repository: it comes from non-free,
signed by Debian's archive key, and gets Debian's updates. Its rows (``debian_drivers.yaml``)
name the branch, the exact release and the packages per Debian release, read from the archive
with a date. The engine offers it as one more driver option; it wins where it fits the GPUs and
the chosen CUDA build (no third-party repository ranks right after the PyTorch build), and when
it does not fit, the rejection says what would make it fit. Pure: the data file is read once.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

from gpuwizard.core.codec import CodecError, from_jsonable
from gpuwizard.recommend.os_support import OsRelease
from gpuwizard.recommend.ranking import is_supported
from gpuwizard.recommend.rules import (
    DEBIAN_ARCHIVE,
    Candidate,
    DriverAction,
    DriverOption,
    failures,
)
from gpuwizard.recommend.table import CompatTable, CompatTableError, Flavor, TorchRelease
from gpuwizard.recommend.target import Target

SOURCE = DEBIAN_ARCHIVE


@dataclass(frozen=True)
class DebianDriver:
    version: str
    """Debian's major release, "12"."""
    codename: str
    branch: str
    driver: str
    """The driver release the packages carry, "535.309.01"."""
    package_version: str
    """Debian's package version, "535.309.01-0+deb12u1"."""
    proprietary: tuple[str, ...]
    open: tuple[str, ...]
    sources: tuple[str, ...]
    open_problem: str | None = None
    """Why the open modules are not offered on this release (empty ``open``)."""

    def packages(self, flavor: Flavor) -> tuple[str, ...]:
        return self.open if flavor == "open" else self.proprietary


@dataclass(frozen=True)
class DebianDrivers:
    checked: str
    sources: dict[str, str]
    releases: tuple[DebianDriver, ...]

    def release(self, version: str) -> DebianDriver | None:
        return next((r for r in self.releases if r.version == version), None)


def parse_drivers(text: str) -> DebianDrivers:
    try:
        drivers: DebianDrivers = from_jsonable(
            DebianDrivers, yaml.safe_load(text), "debian_drivers"
        )
    except (yaml.YAMLError, CodecError) as error:
        raise CompatTableError(f"debian_drivers.yaml: {error}") from None
    for row in drivers.releases:
        where = f"debian_drivers.yaml releases[{row.codename}]"
        if not row.sources or not set(row.sources) <= set(drivers.sources):
            raise CompatTableError(f"{where}: cites no source, or an unknown one")
        if not row.driver.startswith(row.branch + ".") or not row.package_version.startswith(
            row.driver
        ):
            raise CompatTableError(f"{where}: branch, driver and package version disagree")
        if not row.open and not row.open_problem:
            raise CompatTableError(f"{where}: no open packages and no open_problem saying why")
    return drivers


@functools.cache
def load_drivers() -> DebianDrivers:
    return parse_drivers(Path(__file__).with_name("debian_drivers.yaml").read_text("utf-8"))


def row_for(os_row: OsRelease | None) -> DebianDriver | None:
    if os_row is None or os_row.id != "debian":
        return None
    return load_drivers().release(os_row.version)


def options(os_row: OsRelease | None, action: DriverAction) -> tuple[DriverOption, ...]:
    """Debian's driver, one option per flavour it can install on this release."""
    row = row_for(os_row)
    if row is None:
        return ()
    flavors: tuple[Flavor, ...] = ("open", "proprietary")
    return tuple(
        DriverOption(action, row.branch, row.driver, flavor, SOURCE)
        for flavor in flavors
        if row.packages(flavor)
    )


def not_offered(os_row: OsRelease | None) -> list[tuple[str, str]]:
    """(option label, reason) for Debian's flavours that cannot be installed at all."""
    row = row_for(os_row)
    if row is None or row.open or row.open_problem is None:
        return []
    label = f"install R{row.branch} open from Debian's archive"
    return [(label, f"not offered: {row.open_problem} (checked {load_drivers().checked})")]


def hint(
    table: CompatTable, target: Target, release: TorchRelease, option: DriverOption, nvcc: bool
) -> str:
    """What would let Debian's driver be used: another CUDA build of the same PyTorch. Nothing
    when its branch is past its end of life: a supported branch that fits would still win."""
    if not is_supported(table, option.branch):
        return ""
    fitting = [
        variant
        for variant in release.variants
        if not failures(
            table,
            target,
            Candidate(release, variant, table.build(variant, release.version, target.arch), option),
            nvcc,
        )
    ]
    if not fitting:
        return ""
    return f"; pass --variant {fitting[-1]} to use Debian's own driver (no third-party repository)"
