"""The person's pins (a torch release, a CUDA build, a driver branch and its kernel modules, the
environment's Python) checked against the table before anything is searched: a release, a build,
a branch or a Python that gpuwizard never offers anywhere, or a pair that never existed together
(torch 2.15 for Python 3.10), is bad input with one line naming the value, whatever the host.

Used for the command line (``--torch``, ``--variant``, ``--driver-branch``, ``--kernel-modules``,
``--env-python``) and for answers files (``choices.torch``, ...) alike; pins that exist but do not
fit a host are the engine's business (a refusal, exit 3: ``pinned.py`` and the rules), not this
module's.
"""

from __future__ import annotations

import re

from gpuwizard.core.version import Version, is_cuda_variant, is_version, variant_cuda
from gpuwizard.recommend.result import Choices
from gpuwizard.recommend.table import CompatTable, DriverBranch, TorchRelease
from gpuwizard.recommend.target import BadInput


def _series(table: CompatTable, pin: str) -> list[TorchRelease]:
    """The releases a torch pin names: that release, or every release of a series (2.5)."""
    exact = table.torch(pin)
    if exact is not None:
        return [exact]
    return [r for r in table.torch_releases if r.version.startswith(pin + ".")]


def _known_range(table: CompatTable) -> str:
    versions = sorted((r.version for r in table.torch_releases), key=Version.parse)
    return f"{versions[0]} to {versions[-1]}"


def check_torch(table: CompatTable, pin: str | None, name: str = "--torch") -> None:
    if pin is None or pin == "latest":
        return
    if not is_version(pin) or pin != pin.strip():
        raise BadInput(
            f"{name} {pin!r}: expected a version like 2.14.1, a series like 2.5, or latest"
        )
    if not _series(table, pin):
        raise BadInput(
            f"{name} {pin!r}: no such PyTorch release in gpuwizard's table ({_known_range(table)}; "
            "`latest` takes the newest)"
        )


def check_variant(
    table: CompatTable,
    variant: str | None,
    torch: str | None,
    names: tuple[str, str] = ("--variant", "--torch"),
) -> None:
    """``variant`` must be a CUDA build some release had, and one of the pinned release's."""
    if variant is None:
        return
    name, torch_name = names
    if not is_cuda_variant(variant):
        raise BadInput(f"{name} {variant!r}: expected a CUDA build name like cu126 or cu130")
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


def check_pins(
    table: CompatTable,
    torch: str | None,
    variant: str | None,
    names: tuple[str, str] = ("--torch", "--variant"),
) -> None:
    """Both pins, in the order a person reads them; BadInput names the first that is wrong."""
    check_torch(table, torch, names[0])
    check_variant(table, variant, torch, (names[1], names[0]))


def check_branch(table: CompatTable, branch: str | None, name: str = "--driver-branch") -> None:
    """A driver branch gpuwizard knows and can install somewhere (its number alone: 580)."""
    if branch is None:
        return
    installable = sorted((d.branch for d in table.drivers if d.installable), key=int)
    if not branch.isascii() or not branch.isdigit() or len(branch) > 4:
        raise BadInput(f"{name} {branch!r}: expected a driver branch number like 580")
    row = table.branch(branch)
    if row is None or not row.installable:
        why = f"R{branch} is not in gpuwizard's table" if row is None else _not_installable(row)
        raise BadInput(f"{name} {branch}: {why}; gpuwizard installs R{', R'.join(installable)}")


def _not_installable(row: DriverBranch) -> str:
    if row.note:
        return f"gpuwizard cannot install R{row.branch} yet ({row.note})"
    return f"R{row.branch} reached its end of life in {row.eol}"


FLAVOURS = ("open", "proprietary")


def check_flavour(flavour: str | None, name: str = "--kernel-modules") -> None:
    if flavour is not None and flavour not in FLAVOURS:
        raise BadInput(f"{name} {flavour!r}: expected open or proprietary")


def check_python(
    table: CompatTable, python: str | None, torch: str | None, names: tuple[str, str]
) -> None:
    """A CPython minor (3.11) that a release ships wheels for: the pinned one, else any."""
    if python is None:
        return
    name, torch_name = names
    if not _MINOR.fullmatch(python):
        raise BadInput(f"{name} {python!r}: expected a Python version like 3.11")
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


_MINOR = re.compile(r"3\.[0-9]{1,2}")


def _within(version: str, low: str, high: str) -> bool:
    return Version.parse(low) <= Version.parse(version) <= Version.parse(high)


PIN_NAMES = {
    "torch": "--torch",
    "variant": "--variant",
    "driver_branch": "--driver-branch",
    "driver_flavour": "--kernel-modules",
    "python": "--env-python",
}
"""Each pin's name on the command line; an answers file names them ``choices.<field>``."""


def check_choices(table: CompatTable, choices: Choices, names: dict[str, str] = PIN_NAMES) -> None:
    """Every pin, in the order a person reads them; BadInput names the first that is wrong."""
    check_pins(table, choices.torch, choices.variant, (names["torch"], names["variant"]))
    check_branch(table, choices.driver_branch, names["driver_branch"])
    check_flavour(choices.driver_flavour, names["driver_flavour"])
    check_python(table, choices.python, choices.torch, (names["python"], names["torch"]))
