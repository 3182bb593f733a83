"""The person's pins (a torch release, a CUDA build) checked against what PyTorch ever shipped,
before anything is searched: a release or a build that never existed, or a pair that never
existed together, is bad input with one line naming the value, whatever the host.

Used for the command line (``--torch``, ``--variant``) and for answers files
(``choices.torch``, ``choices.variant``) alike; pins that exist but do not fit a host are the
engine's business (a refusal, exit 3), not this module's.
"""

from __future__ import annotations

from gpuwizard.core.version import Version, is_cuda_variant, is_version, variant_cuda
from gpuwizard.recommend.table import CompatTable, TorchRelease
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
