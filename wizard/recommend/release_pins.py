"""The person's pins (a torch release, a CUDA build, a driver branch, the environment's Python)
checked against the table before anything is searched: a release, a build, a branch or a Python
that gpuwizard never offers anywhere, or a pair that never existed together (torch 2.15 for
Python 3.10), is bad input with one line naming the value, whatever the host.

The form of every wish is its declaration's to check (``core.request``); this module adds what
the table knows. Used for the command line (named by flag: ``--torch``) and for answers files
(named by key: ``request.torch``) alike; pins that exist but do not fit a host are the engine's
business (a refusal, exit 3: ``host_pins.py`` and the rules), not this module's.
"""

from __future__ import annotations

from collections.abc import Callable

from gpuwizard.core.request import RequestError, SetupRequest, Wish, check_form, wish_named
from gpuwizard.core.version import Version, variant_cuda
from gpuwizard.recommend.table import CompatTable, DriverBranch, TorchRelease
from gpuwizard.recommend.target import BadInput

Namer = Callable[[Wish], str]
"""How the caller names a wish in its one-line error: a flag, or an answers key."""


def by_flag(declared: Wish) -> str:
    return declared.flag


def check_request(table: CompatTable, request: SetupRequest, name_of: Namer = by_flag) -> None:
    """Every wish's form, then every pin against the table, in the order a person reads them;
    BadInput names the first that is wrong."""
    try:
        check_form(request, name_of)
    except RequestError as error:
        raise BadInput(str(error)) from None
    torch = name_of(wish_named("torch"))
    _check_torch(table, request.torch, torch)
    _check_variant(table, request.variant, request.torch, (name_of(wish_named("variant")), torch))
    _check_branch(table, request.driver_branch, name_of(wish_named("driver_branch")))
    _check_python(table, request.python, request.torch, (name_of(wish_named("python")), torch))


def _series(table: CompatTable, pin: str) -> list[TorchRelease]:
    """The releases a torch pin names: that release, or every release of a series (2.5)."""
    exact = table.torch(pin)
    if exact is not None:
        return [exact]
    return [r for r in table.torch_releases if r.version.startswith(pin + ".")]


def _known_range(table: CompatTable) -> str:
    versions = sorted((r.version for r in table.torch_releases), key=Version.parse)
    return f"{versions[0]} to {versions[-1]}"


def _check_torch(table: CompatTable, pin: str | None, name: str) -> None:
    if pin is None or pin == "latest":
        return
    if not _series(table, pin):
        raise BadInput(
            f"{name} {pin!r}: no such PyTorch release in gpuwizard's table ({_known_range(table)}; "
            "`latest` takes the newest)"
        )


def _check_variant(
    table: CompatTable, variant: str | None, torch: str | None, names: tuple[str, str]
) -> None:
    """``variant`` must be a CUDA build some release had, and one of the pinned release's."""
    if variant is None:
        return
    name, torch_name = names
    every = {v for r in table.torch_releases for v in r.variants}
    if variant not in every:
        known = sorted(every, key=lambda v: Version.parse(variant_cuda(v)))
        raise BadInput(
            f"{name} {variant!r}: no PyTorch release has that CUDA build (known: {known[0]} to {known[-1]})"
        )
    if torch is None or torch == "latest":
        return
    releases = _series(table, torch)
    if not any(variant in r.variants for r in releases):
        builds = sorted(
            {v for r in releases for v in r.variants}, key=lambda v: Version.parse(variant_cuda(v))
        )
        raise BadInput(
            f"{name} {variant!r}: torch {torch} was never built for CUDA {variant_cuda(variant)} "
            f"({torch_name} {torch} has {', '.join(builds)})"
        )


def _check_branch(table: CompatTable, branch: str | None, name: str) -> None:
    """A driver branch gpuwizard knows and can install somewhere (its number alone: 580)."""
    if branch is None:
        return
    installable = sorted((d.branch for d in table.drivers if d.installable), key=int)
    row = table.branch(branch)
    if row is None or not row.installable:
        why = f"R{branch} is not in gpuwizard's table" if row is None else _not_installable(row)
        raise BadInput(f"{name} {branch}: {why}; gpuwizard installs R{', R'.join(installable)}")


def _not_installable(row: DriverBranch) -> str:
    if row.note:
        return f"gpuwizard cannot install R{row.branch} yet ({row.note})"
    return f"R{row.branch} reached its end of life in {row.eol}"


def _check_python(
    table: CompatTable, python: str | None, torch: str | None, names: tuple[str, str]
) -> None:
    """A CPython minor (3.11) that a release ships wheels for: the pinned one, else any."""
    if python is None:
        return
    name, torch_name = names
    every = torch is None or torch == "latest"
    releases = list(table.torch_releases) if torch is None or every else _series(table, torch)
    ranges = [r.python for r in releases]
    if any(_within(python, low, high) for low, high in ranges):
        return
    if every:
        low = min((r[0] for r in ranges), key=Version.parse)
        high = max((r[1] for r in ranges), key=Version.parse)
        raise BadInput(
            f"{name} {python}: no PyTorch release in gpuwizard's table has wheels for it "
            f"(they cover Python {low} to {high})"
        )
    low, high = ranges[0]
    raise BadInput(
        f"{name} {python}: torch {torch} never shipped wheels for it "
        f"({torch_name} {torch} supports Python {low}–{high})"
    )


def _within(version: str, low: str, high: str) -> bool:
    return Version.parse(low) <= Version.parse(version) <= Version.parse(high)
