"""The engine's order of preference among candidates that pass every rule, and its names.

``rank`` turns a candidate into a tuple, lower is better; ``RANKED_BY`` names each place, so the
explanation of an alternative that lost can say which preference decided, in the words of that
place (``explain``), never a preference that did not. Pure.
"""

from __future__ import annotations

from gpuwizard.core.version import Version, at_least, variant_cuda
from gpuwizard.recommend.rules import THIRD_PARTY, Candidate
from gpuwizard.recommend.table import CompatTable

# "Starting in the 560 driver release series, the open kernel module flavor is the default" [S14]
OPEN_DEFAULT_FROM = 560


def rank(
    table: CompatTable, c: Candidate, platform: str = "x86_64", installed: str | None = None
) -> tuple[int, ...]:
    """Lower is better; torch order is handled by trying releases newest first.

    Right after keeping a working driver and the build: a supported branch over one past its end
    of life (a supported branch that fits is never passed over for an end-of-life one), then the
    installed branch (a change of kernel modules stays in it), then the OS's own archive. A
    build the driver runs natively (driver >= the CUDA release's GA driver) beats one it runs
    only through minor-version compatibility, which has no PTX JIT; so for torch 2.15's default
    cu132 a fresh install picks R595 (13.2 GA) over R580 [S8][S9]. ``RANKED_BY`` names each
    place of the tuple.
    """
    branch = table.branch(c.driver.branch)
    supported = branch is not None and is_supported(table, branch.branch)
    long_term = supported and branch is not None and branch.designation == "LTSB"
    release = c.torch
    cuda = Version.parse(variant_cuda(c.variant))
    variant_rank = (
        0
        if c.variant == release.pypi_default(platform)
        else 2
        if c.variant in release.experimental
        else 1
    )
    open_preferred = int(c.driver.branch) >= OPEN_DEFAULT_FROM
    return (
        0 if c.driver.action == "keep" else 1,
        variant_rank,
        0 if supported else 1,
        0 if installed in (None, c.driver.branch) else 1,
        1 if c.driver.source in THIRD_PARTY else 0,
        0 if runs_natively(table, c.driver.version, c.variant) else 1,
        0 if long_term else 1,
        -int(c.driver.branch),
        -cuda.parts[0] * 100 - cuda.parts[1],
        0 if (c.driver.flavor == "open") == open_preferred else 1,
    )


RANKED_BY = (
    "keep",
    "build",
    "supported",
    "installed-branch",
    "source",
    "native",
    "long-term",
    "newer-branch",
    "newer-cuda",
    "flavour",
)
"""What each place of ``rank``'s tuple compares, for the explanation of a lost option."""


def is_supported(table: CompatTable, branch: str) -> bool:
    """The branch is known and not past its end of life on the date the table was reviewed."""
    row = table.branch(branch)
    return row is not None and row.eol >= table.reviewed[:7]


def runs_natively(table: CompatTable, driver: str, variant: str) -> bool:
    """The driver is at least the GA driver of the build's CUDA release (no minor-version
    compatibility needed) [S8]."""
    ga = table.cuda(variant_cuda(variant))
    return ga is None or at_least(driver, ga.ga_driver)
