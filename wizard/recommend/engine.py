"""The solver: the best driver x CUDA build x PyTorch x Python for a target, with its reasons.

Candidates are every (torch release, CUDA build, driver option) the table and the user's pins
allow. Every rule runs on every candidate; the survivors are ranked by a declared preference:

1. the newest torch release that the table's "latest" policy allows (its whole set confirmed),
   unless one is pinned;
2. then the order of ``ranking.rank``: keeping a working driver over changing it; PyPI's default
   CUDA build for the host's platform, then the other builds, experimental builds last; a
   supported branch over one past its end of life; the installed branch (another flavour of its
   kernel modules) over another branch; a driver the OS's own archive carries over one from a
   third-party repository (on Debian: its own non-free driver over NVIDIA's repository,
   ``debian_native``); a driver that runs the build natively over minor-version compatibility;
   a long-term branch over a production one, newest first; newer CUDA; open kernel modules
   from R560 on (NVIDIA's default), proprietary before.

The winner becomes a ``Recommendation``; when nothing survives, a ``Refusal`` names the rule that
fails for every candidate of the releases tried (``refusal.py``). ``explain.py`` writes the
sentences.
"""

from __future__ import annotations

from gpuwizard.core.request import SetupRequest
from gpuwizard.core.version import Version, is_version
from gpuwizard.recommend import debian_native, explain, host_pins
from gpuwizard.recommend.os_support import OsRelease, match_os
from gpuwizard.recommend.ranking import rank
from gpuwizard.recommend.refusal import refusal_from
from gpuwizard.recommend.result import Recommendation, Refusal, Search
from gpuwizard.recommend.rules import Candidate, DriverAction, DriverOption, failures
from gpuwizard.recommend.table import CompatTable, TorchRelease
from gpuwizard.recommend.target import BadInput, Target

_NO_PINS = SetupRequest()


def resolve_torch(table: CompatTable, pin: str | None) -> tuple[TorchRelease, ...]:
    """The releases to try, best first. Raises BadInput for a version the table does not know."""
    if pin is None or pin == "latest":
        # table.latest_policy in words: releases whose whole set is confirmed, newest first
        return tuple(r for r in _newest_first(table.torch_releases) if r.confirmed)
    if not is_version(pin):
        raise BadInput(
            f"--torch {pin!r}: expected a version like 2.14.1, a series like 2.5, or latest"
        )
    exact = table.torch(pin)
    if exact:
        return (exact,)
    series = [r for r in _newest_first(table.torch_releases) if r.version.startswith(pin + ".")]
    if series:
        return (series[0],)
    known = ", ".join(r.version for r in reversed(_newest_first(table.torch_releases)))
    raise BadInput(f"--torch {pin!r}: unknown release; known: {known}")


def _newest_first(releases: tuple[TorchRelease, ...]) -> list[TorchRelease]:
    return sorted(releases, key=lambda r: Version.parse(r.version), reverse=True)


def driver_options(
    table: CompatTable, target: Target, os_row: OsRelease | None, request: SetupRequest
) -> tuple[DriverOption, ...]:
    options: list[DriverOption] = []
    current = target.driver
    if current:
        options.append(DriverOption("keep", current.branch, current.version, current.flavor))
    if target.driver_managed_elsewhere or request.keep_driver or request.use_env or os_row is None:
        return tuple(options)
    action: DriverAction = "install" if current is None else "upgrade"
    for branch in os_row.driver_branches:
        row = table.branch(branch)
        version = table.newest_driver(row, os_row) if row else None
        if row is None or not row.installable or version is None:
            continue
        for flavor in ("open", "proprietary"):
            option = DriverOption(action, branch, version, flavor, os_row.driver_source)
            if getattr(row, flavor) and not _is_installed(option, target):
                options.append(option)
    native = debian_native.options(os_row, action)
    options += [o for o in native if not _is_installed(o, target)]
    return tuple(options)


def _is_installed(option: DriverOption, target: Target) -> bool:
    """The installed driver is this branch with this flavour (or of a flavour nobody knows):
    keeping it is the option, not reinstalling it. Its other flavour stays on offer."""
    current = target.driver
    if current is None or option.branch != current.branch:
        return False
    return current.flavor in (None, option.flavor)


def candidates(
    table: CompatTable,
    target: Target,
    release: TorchRelease,
    options: tuple[DriverOption, ...],
    variant: str | None,
    python: str | None = None,
) -> list[Candidate]:
    # A release with no build for this platform still yields its x86_64 variants, so the
    # wheel_exists rule can say so ("torch 2.5.1 has no cu124 build for aarch64").
    variants = [variant] if variant else list(release.builds_for(target.arch) or release.variants)
    return [
        Candidate(release, v, table.build(v, release.version, target.arch), option, python)
        for v in variants
        for option in options
    ]


def search(table: CompatTable, target: Target, request: SetupRequest) -> Search:
    """Try releases newest first; the first release with a passing candidate wins."""
    os_row = match_os(table, target.os_id or "", target.os_version or "")
    releases = resolve_torch(table, request.torch)
    if request.variant and not any(
        request.variant in (*r.variants, *r.aarch64) for r in table.torch_releases
    ):
        raise BadInput(f"--variant {request.variant!r}: no PyTorch release has that build")
    options = driver_options(table, target, os_row, request)
    usable = tuple(o for o in options if host_pins.allowed(o, request))
    installed = target.driver.branch if target.driver else None
    closest: Candidate | None = None
    tried: list[Candidate] = []
    for release in releases:
        scored = [
            (
                c,
                len(failures(table, target, c, request.needs_nvcc)),
                rank(table, c, target.arch, installed),
            )
            for c in candidates(table, target, release, usable, request.variant, request.python)
        ]
        if closest is None and scored:
            closest = min(scored, key=lambda s: (s[1], s[2]))[0]
        passing = [s for s in scored if s[1] == 0]
        if passing:
            winner = min(passing, key=lambda s: s[2])[0]
            return Search(target, os_row, request, winner, winner, options, releases)
        tried += [s[0] for s in scored]
    return Search(target, os_row, request, None, closest, options, releases, tuple(tried))


def recommend(
    table: CompatTable, target: Target, request: SetupRequest = _NO_PINS
) -> Recommendation | Refusal:
    """The recommendation for a target, or a refusal that says why and what would help."""
    if refusal := explain.precondition_refusal(table, target):
        return refusal
    os_row = match_os(table, target.os_id or "", target.os_version or "")
    if why := host_pins.pin_refusal(table, target, os_row, request):
        return Refusal(why, explain.summarise_gpus(target.gpus))
    found = search(table, target, request)
    if found.winner is None:
        if why := host_pins.nothing_allowed(found.options, request, found.os_row):
            return Refusal(why, explain.summarise_gpus(target.gpus))
        return refusal_from(table, found)
    return explain.recommendation_from(table, found)
