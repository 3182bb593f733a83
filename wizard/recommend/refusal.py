"""Why nothing fits: the rule that fails for every candidate, not the last near miss.

When the search ends without a winner, every candidate of every release it tried has failed at
least one rule. A cause is *real* when one group of rules fails for all of them: no build of the
release has kernels for the GPU, no driver flavour serves every GPU, no driver the OS offers is
new (or old) enough for the GPU, the driver cannot run any build. That group names the refusal;
its sentences are the rules' own, so a reader can check each. Only when no single group explains
everything does the refusal fall back to the candidate that came closest.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuwizard.recommend.explain import rejected, summarise_gpus
from gpuwizard.recommend.result import Refusal, Search
from gpuwizard.recommend.rules import (
    DEBIAN_ARCHIVE,
    Candidate,
    Rule,
    driver_runs_wheel,
    driver_supports_gpus,
    failures,
    flavor_fits_gpus,
    toolkit_available,
    wheel_exists,
    wheel_for_python,
    wheel_has_kernels,
)
from gpuwizard.recommend.table import CompatTable

# In the order a person fixes them: the wheel, then the driver's flavour, the GPU, the CUDA.
CAUSES: tuple[tuple[str, tuple[Rule, ...]], ...] = (
    ("build", (wheel_exists, wheel_has_kernels)),
    ("python", (wheel_for_python,)),
    ("flavor", (flavor_fits_gpus,)),
    ("driver", (driver_supports_gpus,)),
    ("cuda", (driver_runs_wheel,)),
    ("toolkit", (toolkit_available,)),
)
_MOST_REASONS = 6


def refusal_from(table: CompatTable, found: Search) -> Refusal:
    closest = found.closest
    gpus = summarise_gpus(found.target.gpus)
    if closest is None:
        return Refusal("no driver can be offered for this host", gpus)
    tried = found.tried or (closest,)
    for cause, rules in CAUSES:
        said = _universal(table, found, tried, rules)
        if said:
            if cause == "build" and all(rule is wheel_exists for rule, _ in said):
                cause = "no-build"
            lead = _prefix(found) + _lead(found, cause, said[0][1])
            reasons = tuple(sentence for _, sentence in said[:_MOST_REASONS])
            return Refusal(lead, gpus, reasons, tuple(rejected(table, found, closest)))
    problems = failures(table, found.target, closest, found.request.needs_nvcc)
    lead = (_prefix(found) or "no combination fits: ") + problems[0]
    return Refusal(lead, gpus, tuple(problems), tuple(rejected(table, found, closest)))


def _universal(
    table: CompatTable, found: Search, tried: Sequence[Candidate], rules: tuple[Rule, ...]
) -> list[tuple[Rule, str]]:
    """The group's (rule, sentence) pairs when it fails for every candidate tried, else []."""
    if toolkit_available in rules and not found.request.needs_nvcc:
        return []
    out: list[tuple[Rule, str]] = []
    for candidate in tried:
        said = [(rule, s) for rule in rules if (s := rule(table, found.target, candidate))]
        if not said:
            return []
        if said[0][1] not in (sentence for _, sentence in out):
            out.append(said[0])
    return out


def _lead(found: Search, cause: str, first: str) -> str:
    target, releases = found.target, found.releases
    scope = (
        f"torch {releases[0].version}"
        if len(releases) == 1
        else f"any torch release from {releases[-1].version} to {releases[0].version}"
    )
    names = ", ".join(dict.fromkeys(g.name for g in target.gpus))
    if cause == "no-build":
        return f"{scope} has no CUDA build for {target.arch} in gpuwizard's table: {first}"
    if cause == "build":
        return f"no {target.arch} CUDA build of {scope} has kernels for {names}: {first}"
    if cause == "python":
        return f"{scope} has no wheels for Python {found.request.python} on {target.arch}"
    if cause == "flavor":
        return f"no kernel-module flavour serves every GPU here: {first}"
    if cause == "driver":
        return f"no driver {_driver_scope(found)} supports {names}: {first}"
    if cause == "cuda":
        return f"the driver cannot run any CUDA build of {scope}: {first}"
    return first


def _driver_scope(found: Search) -> str:
    """Which branches could be installed here, by where each comes from: the same branches as
    the reasons that follow (NVIDIA's or the OS's packages, and Debian's own driver)."""
    installs = [o for o in found.options if o.action != "keep"]
    if not installs or found.os_row is None:
        return "that can stay on this host"
    by_source: dict[str, list[str]] = {}
    for option in installs:
        branches = by_source.setdefault(_SOURCES.get(option.source or "", "its archive"), [])
        if f"R{option.branch}" not in branches:
            branches.append(f"R{option.branch}")
    offered = ", ".join(f"{_and(b)} from {where}" for where, b in by_source.items())
    return f"that gpuwizard can install on {found.os_row.label} (it offers {offered})"


_SOURCES = {
    "ubuntu-archive": "Ubuntu's archive",
    "cuda-repo-apt": "NVIDIA's repository",
    "cuda-repo-dnf": "NVIDIA's repository",
    DEBIAN_ARCHIVE: "Debian's archive",
}


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _prefix(found: Search) -> str:
    request = found.request
    parts = [f"torch {found.releases[0].version}" if request.torch and found.releases else ""]
    parts += [request.variant or "", "the installed driver" if request.keep_driver else ""]
    parts += [f"R{request.driver_branch}" if request.driver_branch else ""]
    parts += [f"{request.driver_flavour} modules" if request.driver_flavour else ""]
    parts += [f"Python {request.python}" if request.python else ""]
    pins = " with ".join(p for p in parts if p)
    return f"nothing fits {pins}: " if pins else ""
