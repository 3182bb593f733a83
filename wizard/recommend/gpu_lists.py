"""NVIDIA's own lists of the GPUs each driver release supports, and where compat.yaml disagrees.

One list per kernel-module flavour, both NVIDIA's:

* open: the "Compatible GPUs" table of NVIDIA/open-gpu-kernel-modules' README.md, read at every
  release tag [S13];
* proprietary: "Appendix A. Supported NVIDIA GPU Products" of the driver's own README (its list
  of current GPUs, not the legacy tables after it), as the driver packages of Ubuntu's and
  Debian's archives ship it [NVREADME].

``tools/check_compat.py`` reads them (a git repository; the archives through apt) and keeps, for
every GPU of compat.yaml's ``gpu_listings``, the releases read and those that list it, dated, in
``tools/compat_gpu_lists_cache.json``. This module parses the two formats, holds the cache's
shape and judges the table against it, so the tool and the tests agree; it reads no file and
runs nothing.

What a list can say: the first release read that names a device (a driver older than it is not
known to support it), whether a release after that leaves it out again (the lists disagree: the
fact is UNCONFIRMED), and the last release that names it when later ones drop it (its last
branch).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gpuwizard.core import gpus
from gpuwizard.core.codec import from_jsonable, to_jsonable
from gpuwizard.core.version import Version
from gpuwizard.recommend.table import CompatTable, Flavor, GpuListing

FLAVOURS: tuple[Flavor, ...] = ("open", "proprietary")

_ROW_ID = re.compile(r"^\|[^|]+\|\s*(?:0x)?([0-9A-Fa-f]{4})\b")
_APPENDIX = "Appendix A. Supported NVIDIA GPU Products"
_README_VERSION = re.compile(r"Most Recent Driver Version:\s*(\d+(?:\.\d+)+)")
_APPENDIX_ROW = re.compile(
    r"^\s+\S.*?\s{2,}(?:0x)?([0-9A-Fa-f]{4})(?:\s+[0-9A-Fa-f]{4}){0,2}(?:\s|$)"
)
_END_OF_CURRENT = re.compile(r"legacy GPUs that are no longer supported|^Appendix B\.|LEGACY", re.I)


def open_readme_ids(text: str) -> frozenset[str]:
    """The PCI device ids of the open modules' README's "Compatible GPUs" table ("2335")."""
    _, found, table = text.partition("## Compatible GPUs")
    if not found:
        return frozenset()
    return frozenset(
        m.group(1).lower() for line in table.splitlines() if (m := _ROW_ID.match(line))
    )


def readme_version(text: str) -> str | None:
    """The release a driver README describes ("Most Recent Driver Version: 580.95.05")."""
    found = _README_VERSION.search(text)
    return found.group(1) if found else None


def appendix_ids(text: str) -> frozenset[str]:
    """The device ids the README's Appendix A lists as current GPUs (the legacy tables excluded).

    The appendix's heading appears twice (the contents, then the body); the body ends at
    Appendix B, and its current GPUs end where the legacy tables begin.
    """
    start = text.rfind(_APPENDIX)
    if start < 0:
        return frozenset()
    ids: set[str] = set()
    for line in text[start + len(_APPENDIX) :].splitlines():
        if _END_OF_CURRENT.search(line):
            break
        if found := _APPENDIX_ROW.match(line):
            ids.add(found.group(1).lower())
    return frozenset(ids)


@dataclass(frozen=True)
class FlavourLists:
    """The releases of one flavour's list that were read, and where each came from."""

    source: str
    releases: tuple[str, ...]
    """Every release read, in version order."""
    origin: dict[str, str]
    """release -> what was read for it (a git tag, or a package and its archive suite)."""


@dataclass(frozen=True)
class GpuListsRead:
    """What NVIDIA's lists said, for the GPUs of the table, on the date they were read."""

    schema: int
    checked: str
    """The date (YYYY-MM-DD) the lists were read."""
    open: FlavourLists
    proprietary: FlavourLists
    listed: dict[str, dict[str, tuple[str, ...]]]
    """device id -> flavour -> the releases read that list it, in version order."""

    def lists(self, flavour: Flavor) -> FlavourLists:
        return self.open if flavour == "open" else self.proprietary


def parse(text: str) -> GpuListsRead:
    """The cache's text (JSON) as data; raises ValueError or CodecError when it is not."""
    return from_jsonable(GpuListsRead, json.loads(text), "compat_gpu_lists_cache")


def dump(lists: GpuListsRead) -> str:
    return json.dumps(to_jsonable(lists), indent=1, sort_keys=True) + "\n"


@dataclass(frozen=True)
class Finding:
    """What one flavour's lists say of one device."""

    first: str | None
    """The oldest release read that lists it; None: no release read does."""
    before: str | None
    """The newest release read older than ``first`` (which does not list it); None: none."""
    gaps: tuple[str, ...]
    """Releases read between its first and last listing that leave it out: the lists disagree."""
    last: str | None
    dropped: str | None
    """The first release read after ``last`` (none list it again): support ended; None: it did not."""

    @property
    def gap_branches(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(branch_of(r) for r in self.gaps))

    @property
    def last_branch(self) -> str | None:
        """The last branch that lists it, when later releases read stop listing it."""
        return branch_of(self.last) if self.last and self.dropped else None


def branch_of(release: str) -> str:
    return release.split(".")[0]


def _sorted(releases: Iterable[str]) -> list[str]:
    return sorted(releases, key=Version.parse)


def find(releases: Iterable[str], listing: Iterable[str]) -> Finding:
    """What a flavour's releases read and those of them that list a device say of it."""
    ordered, listed = _sorted(releases), set(listing)
    named = [r for r in ordered if r in listed]
    if not named:
        return Finding(None, None, (), None, None)
    first, last = Version.parse(named[0]), Version.parse(named[-1])
    older = [r for r in ordered if Version.parse(r) < first]
    inside = [r for r in ordered if first < Version.parse(r) < last and r not in listed]
    newer = [r for r in ordered if Version.parse(r) > last]
    return Finding(
        named[0],
        older[-1] if older else None,
        tuple(inside),
        named[-1],
        newer[0] if newer else None,
    )


def finding(lists: GpuListsRead, device_id: str, flavour: Flavor) -> Finding | None:
    """None when the device was not looked up (added to the table after the lists were read)."""
    per_flavour = lists.listed.get(device_id)
    if per_flavour is None:
        return None
    return find(lists.lists(flavour).releases, per_flavour.get(flavour, ()))


def _first_problem(claimed: str | None, found: Finding) -> str | None:
    """Why the table's first release disagrees with the lists; None when it fits them.

    The lists bound it: after the newest release read that leaves the device out before its
    first listing, and no later than that first listing (an earlier release read from another
    official source may be cited).
    """
    if found.first is None:
        return None if claimed is None else f"table says {claimed}, but no release read lists it"
    if claimed is None:
        return f"table says none, but {found.first} lists it"
    after = found.before is None or Version.parse(claimed) > Version.parse(found.before)
    if after and Version.parse(claimed) <= Version.parse(found.first):
        return None
    since = f"after {found.before}, which does not" if found.before else "the oldest release read"
    return f"table says {claimed}, but the lists first name it in {found.first} ({since})"


def _flavour_problems(row: GpuListing, flavour: Flavor, found: Finding) -> list[str]:
    out = []
    if problem := _first_problem(row.first(flavour), found):
        out.append(problem)
    if tuple(row.gaps(flavour)) != found.gap_branches:
        left_out = ", ".join(found.gaps) or "none"
        out.append(
            f"{flavour}_gaps: table says {list(row.gaps(flavour))}, the lists "
            f"{list(found.gap_branches)} (left out in {left_out})"
        )
    return [f"{flavour}: {p}" for p in out]


def _row_problems(row: GpuListing, lists: GpuListsRead) -> list[str]:
    where = f"gpu_listings[{row.device_id} {row.name}]"
    findings = {f: finding(lists, row.device_id, f) for f in FLAVOURS}
    if any(found is None for found in findings.values()):
        return [f"{where}: not in the lists read on {lists.checked}; run tools/check_compat.py"]
    out = [
        problem
        for flavour, found in findings.items()
        if found is not None
        for problem in _flavour_problems(row, flavour, found)
    ]
    gaps = any(found.gaps for found in findings.values() if found is not None)
    if gaps and row.confirmed:
        out.append("the lists leave it out between listings, so it must be confirmed: false")
    return [f"{where} {p}" for p in out + _catalogue_problems(row, findings)]


def _catalogue_problems(row: GpuListing, findings: Mapping[Flavor, Finding | None]) -> list[str]:
    """The catalogue's rules (integrated GPUs, a chip's last branch) against the lists."""
    model = gpus.lookup(row.device_id)
    if model is None:
        return ["not in gpuwizard's GPU catalogue"]
    out = []
    closed = findings["proprietary"]
    if row.integrated != model.is_integrated:
        out.append(f"integrated: table says {row.integrated}, the catalogue {model.is_integrated}")
    if closed is not None and closed.first is not None:
        expected = row.last_branch or model.last_driver_branch
        if closed.last_branch != expected:
            out.append(
                f"last branch: table or catalogue say {expected or 'none'}, the appendix "
                f"{closed.last_branch or 'none'} (last listed in {closed.last})"
            )
    return out


def disagreements(table: CompatTable, lists: GpuListsRead) -> list[str]:
    """Every way the table's ``gpu_listings`` disagree with NVIDIA's lists as read."""
    return [problem for row in table.gpu_listings for problem in _row_problems(row, lists)]


def describe(found: Finding) -> str:
    if found.first is None:
        return "listed in no release read"
    since = f" (not in {found.before})" if found.before else " (the oldest release read)"
    text = f"first {found.first}{since}"
    if found.gaps:
        text += f"; left out in {', '.join(found.gaps)}"
    if found.dropped:
        text += f"; last {found.last} (not in {found.dropped})"
    return text


def report(table: CompatTable, lists: GpuListsRead) -> list[str]:
    """One line per GPU of the table: the first release of each flavour's list that names it."""
    out = []
    for row in table.gpu_listings:
        parts = []
        for flavour in FLAVOURS:
            found = finding(lists, row.device_id, flavour)
            parts.append(f"{flavour}: {describe(found) if found else 'not read'}")
        out.append(f"10de:{row.device_id} {row.name}: " + "; ".join(parts))
    return out
