"""What PyPI answered about torch and torchvision, and where compat.yaml disagrees with it.

``tools/check_compat.py`` asks PyPI through pip's own resolver and finder (no wheel is
downloaded) and stores the answers in ``tools/compat_pypi_cache.json``, dated. This module
holds the shape of those answers and the comparison, so the tool and the tests judge the table
the same way, the tests offline. It reads no file and runs nothing itself.

Facts only the PyTorch wheel index knows (the CUDA builds other than PyPI's default, and their
GPU architectures) are not here: compat.yaml cites them by hand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuwizard.core.version import Version, is_version
from gpuwizard.recommend.table import CompatTable, TorchRelease

PLATFORMS = ("x86_64", "aarch64")
OLDEST = "1.12.1"
"""The oldest torch release the table must know (the user's guide pins 1.12.1)."""


@dataclass(frozen=True)
class WheelAnswer:
    """One wheel pip chose for a platform and a Python, as its report describes it."""

    wheel: str
    requires_python: str | None
    cuda: str | None
    """The CUDA build its runtime pin names ("cu130"), or None when it names none."""
    cuda_requirements: tuple[str, ...]
    """Its CUDA requirements that apply on this platform, e.g. ("cuda-toolkit==13.0.2",)."""


@dataclass(frozen=True)
class PlatformAnswer:
    pythons: tuple[str, ...]
    """The CPython versions pip finds a wheel of this release for, oldest first."""
    resolved: dict[str, WheelAnswer]
    """What ``pip install --dry-run --report`` resolved at the oldest and newest of them."""


@dataclass(frozen=True)
class TorchvisionAnswer:
    wheel: str
    requires_python: str | None
    torch: str
    """Its torch requirement, e.g. "==2.14.0" or ">=2.14.0" (empty: any torch)."""


@dataclass(frozen=True)
class PypiAnswers:
    schema: int
    checked: str
    """The date (YYYY-MM-DD) PyPI was asked."""
    pip: str
    index: str
    pythons_asked: tuple[str, ...]
    torch: dict[str, dict[str, PlatformAnswer]]
    """torch version -> platform -> answer; a platform with no wheel at all is absent."""
    torchvision: dict[str, TorchvisionAnswer]


_CUDA_RUNTIME = re.compile(
    r"^(?:nvidia-cuda-runtime-cu\d+|cuda-toolkit(?:\[[^\]]*\])?)==(?P<v>\d+\.\d+)"
)


def cuda_build(requirements: tuple[str, ...]) -> str | None:
    """ "nvidia-cuda-runtime-cu12==12.8.90" -> "cu128"; "cuda-toolkit[...]==13.2.2" -> "cu132"."""
    for requirement in requirements:
        found = _CUDA_RUNTIME.match(requirement.replace(" ", ""))
        if found:
            major, minor = found.group("v").split(".")
            return f"cu{major}{minor}"
    return None


def admits(specifier: str, version: str) -> bool:
    """Whether a requirement's version specifier ("==2.14.0", ">=2.14.0,<2.16") admits a
    plain dotted version. Only the operators torchvision uses are understood."""
    for clause in (c.strip() for c in specifier.split(",") if c.strip()):
        found = re.fullmatch(r"(==|!=|>=|<=|>|<|~=)\s*([0-9.]+)(\.\*)?", clause)
        if not found or not is_version(found.group(2)):
            return False
        if not _clause_holds(found.group(1), found.group(2), bool(found.group(3)), version):
            return False
    return True


def _clause_holds(op: str, bound: str, wildcard: bool, version: str) -> bool:
    have, want = Version.parse(version), Version.parse(bound)
    if wildcard:
        same = have.parts[: len(want.parts)] == want.parts
        return same if op == "==" else not same
    if op == "~=":
        prefix = want.parts[:-1]
        return have >= want and have.parts[: len(prefix)] == prefix
    checks = {
        "==": have == want,
        "!=": have != want,
        ">=": have >= want,
        "<=": have <= want,
        ">": have > want,
        "<": have < want,
    }
    return checks[op]


def disagreements(table: CompatTable, answers: PypiAnswers) -> list[str]:
    """Every place where compat.yaml says something PyPI does not, one sentence each."""
    out = _listing(table, answers)
    for release in table.torch_releases:
        platforms = answers.torch.get(release.version)
        if platforms is None:
            continue
        for platform in PLATFORMS:
            out += _platform(release, platform, platforms.get(platform))
        out += _torchvision(release, answers)
    return out


def _listing(table: CompatTable, answers: PypiAnswers) -> list[str]:
    ours = {r.version for r in table.torch_releases}
    theirs = {v for v in answers.torch if Version.parse(v) >= Version.parse(OLDEST)}
    out = [
        f"torch {v}: on PyPI (checked {answers.checked}) but not in compat.yaml"
        for v in sorted(theirs - ours, key=Version.parse)
    ]
    out += [
        f"torch {v}: in compat.yaml but PyPI has no Linux wheel of it (checked {answers.checked})"
        for v in sorted(ours - theirs, key=Version.parse)
    ]
    return out


def _expected_pythons(release: TorchRelease, platform: str) -> tuple[str, str]:
    if platform == "aarch64" and release.aarch64_python:
        return release.aarch64_python
    return release.python


def _platform(release: TorchRelease, platform: str, answer: PlatformAnswer | None) -> list[str]:
    where = f"torch {release.version} ({platform})"
    listed = platform == "x86_64" or release.aarch64_default is not None
    if answer is None or not answer.pythons:
        return [f"{where}: compat.yaml expects a PyPI wheel, PyPI has none"] if listed else []
    if not listed:
        return [f"{where}: PyPI has wheels ({_span(answer.pythons)}); compat.yaml says none"]
    out = []
    low, high = _expected_pythons(release, platform)
    if (answer.pythons[0], answer.pythons[-1]) != (low, high):
        out.append(
            f"{where}: Python {low}–{high} in compat.yaml, PyPI has wheels for "
            f"{_span(answer.pythons)}"
        )
    out += _default_build(release, platform, answer)
    return out


def _span(pythons: tuple[str, ...]) -> str:
    return f"{pythons[0]}–{pythons[-1]}" if len(pythons) > 1 else pythons[0]


def _default_build(release: TorchRelease, platform: str, answer: PlatformAnswer) -> list[str]:
    where = f"torch {release.version} ({platform})"
    expected = release.pypi_default(platform)
    bundled = platform == "x86_64" and release.default_bundled
    out = []
    for python, wheel in sorted(answer.resolved.items(), key=lambda kv: Version.parse(kv[0])):
        if bundled and wheel.cuda is None:
            continue
        if wheel.cuda != expected:
            said = wheel.cuda or "no CUDA package"
            ours = expected or "no CUDA (cpu)"
            out.append(
                f"{where}: PyPI's default build is {ours} in compat.yaml; the Python {python} "
                f"wheel {wheel.wheel} names {said} ({', '.join(wheel.cuda_requirements) or '-'})"
            )
    return out


def _torchvision(release: TorchRelease, answers: PypiAnswers) -> list[str]:
    where = f"torch {release.version}"
    admitting = sorted(
        (v for v, a in answers.torchvision.items() if admits(a.torch, release.version)),
        key=Version.parse,
    )
    if release.torchvision is None:
        if admitting:
            return [
                f"{where}: compat.yaml names no torchvision, but PyPI's torchvision "
                f"{', '.join(admitting)} declare(s) a torch requirement it meets"
            ]
        return []
    answer = answers.torchvision.get(release.torchvision)
    if answer is None:
        return [f"{where}: torchvision {release.torchvision} was not found on PyPI"]
    if not admits(answer.torch, release.version):
        return [
            f"{where}: torchvision {release.torchvision} requires torch{answer.torch}, "
            f"which {release.version} does not meet"
        ]
    return []
