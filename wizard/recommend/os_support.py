"""The operating systems gpuwizard supports, on their own: all `detect` needs of compat.yaml.

The table (wizard/recommend/table.py) holds these rows beside the drivers, CUDA and PyTorch;
sizing's OS check needs only them and the date the table was reviewed, and `detect` must stay
light. So they are read here straight from the compiled table (compat.json, stamped with the
length and CRC-32 of the YAML it came from), without the whole table's types, decoding or
cross-checks (the table is checked whole when it is compiled, and a test holds compat.json to
that). A stale or missing compiled copy falls back to the YAML's own OS rows. This module reads
only its own files, and never imports the table module (which imports it).
"""

from __future__ import annotations

import functools
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from gpuwizard.core.codec import from_jsonable
from gpuwizard.core.version import Version, is_version

DriverSource = Literal["ubuntu-archive", "cuda-repo-apt", "cuda-repo-dnf"]
HERE = Path(__file__).parent


@dataclass(frozen=True)
class OsRelease:
    """One supported OS release (a row of compat.yaml): its Python, CUDA repository and drivers."""

    id: str
    version: str
    codename: str | None
    python3: str
    cuda_repo: str
    driver_source: DriverSource
    driver_branches: tuple[str, ...]
    standard_support_end: str
    sources: tuple[str, ...]
    cuda_repo_max: str | None = None
    """The newest CUDA NVIDIA still publishes in this release's repository, when capped."""
    extra_pythons: tuple[str, ...] = ()
    """Newer CPython versions the distribution packages beside its python3."""
    dnf_modules: bool = True
    """RHEL 8/9 pick a driver branch with a dnf module stream; RHEL 10 has none (version lock)."""
    driver_versions: dict[str, str] | None = None
    """The newest release of each branch in this release's own archive, where it is not the
    branch's newest (``drivers[].latest``)."""
    note: str | None = None
    confirmed: bool = True

    @property
    def label(self) -> str:
        return f"{_OS_NAMES.get(self.id, self.id.capitalize())} {self.version}"


_OS_NAMES = {"rocky": "Rocky Linux", "almalinux": "AlmaLinux", "rhel": "RHEL"}


class OsRows(Protocol):
    """The OS rows and the review date: the whole table, or ``OsSupport`` alone."""

    @property
    def operating_systems(self) -> tuple[OsRelease, ...]: ...

    @property
    def reviewed(self) -> str: ...


@dataclass(frozen=True)
class OsSupport:
    """The supported OS releases and the date the table was last reviewed."""

    reviewed: str
    operating_systems: tuple[OsRelease, ...]


def source_digest(text: str) -> str:
    """What the compiled copy says it came from: a check for a forgotten recompile, not for
    tampering (the two files ship side by side). CRC-32, not SHA-256: hashlib loads OpenSSL,
    a tenth of what `detect` may take."""
    data = text.encode("utf-8")
    return f"{len(data)}:crc32:{zlib.crc32(data):08x}"


def compiled_data(compiled: str, text: str) -> dict[str, Any] | None:
    """The compiled table's data, or None when it was compiled from another text than ``text``."""
    data = json.loads(compiled)
    if not isinstance(data, dict) or data.get("compiled_from") != source_digest(text):
        return None
    table = data.get("table")
    return table if isinstance(table, dict) else None


@functools.cache
def load_os_support() -> OsSupport:
    text = (HERE / "compat.yaml").read_text(encoding="utf-8")
    try:
        data = compiled_data((HERE / "compat.json").read_text(encoding="utf-8"), text)
    except FileNotFoundError:
        data = None
    if data is None:
        data = _yaml_data(text)
    rows = from_jsonable(tuple[OsRelease, ...], data["operating_systems"], "operating_systems")
    return OsSupport(from_jsonable(str, data["reviewed"], "reviewed"), rows)


def match_os(
    table: OsRows,
    os_id: str,
    version: str,
    id_like: Sequence[str] = (),
    codename: str | None = None,
) -> OsRelease | None:
    """The table row for an OS or the base it derives from (ID_LIKE).

    Ubuntu matches its exact release or, for derivatives such as Linux Mint, the Ubuntu codename
    they are built on; Debian and RHEL-likes match their major release. A release newer than one
    the table knows (Ubuntu 26.10, Debian 14, Rocky 11) gets the newest known release before it
    as a best guess: ``is_guess`` says when that happened, so the caller can warn.
    """
    major = version.split(".")[0]
    for candidate in (os_id, *id_like, *_FAMILY.get(os_id, ())):
        for row in table.operating_systems:
            same_release = row.version in (version, major) or bool(
                codename and row.codename == codename
            )
            if row.id == candidate and same_release:
                return row
    return _newest_before(table, os_id, version)


# RHEL rebuilds that /etc/os-release may not name in ID_LIKE, matched as RHEL.
_FAMILY: dict[str, tuple[str, ...]] = {"centos": ("rhel",), "ol": ("rhel",)}


def _newest_before(table: OsRows, os_id: str, version: str) -> OsRelease | None:
    if not is_version(version):
        return None
    older = [
        row
        for row in table.operating_systems
        if row.id == os_id and Version.parse(row.version) < Version.parse(version)
    ]
    return max(older, key=lambda row: Version.parse(row.version), default=None)


def is_guess(row: OsRelease, os_id: str, version: str) -> bool:
    """Whether ``row`` stands in for a newer release the table does not know."""
    if not is_version(version) or row.id != os_id:
        return False
    major = version.split(".")[0]
    return row.version not in (version, major) and Version.parse(version) > Version.parse(
        row.version
    )


def _yaml_data(text: str) -> dict[str, Any]:
    """The YAML itself, for a stale or missing compiled copy: slower, as good for these rows (the
    table module checks the whole text when it loads it; this module never imports it)."""
    import yaml

    data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if not isinstance(data, dict):
        raise ValueError("compat.yaml is not a mapping")
    return data
