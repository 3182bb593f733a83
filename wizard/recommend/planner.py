"""From a recommendation and the user's options to the Selection the steps install, and the Plan.

The recommender answers "what fits"; the user decides the rest (venv or conda, the optional
parts). This module joins the two into a ``Selection``, picks where the environment's Python
comes from (system, a distribution package, or a standalone CPython), and builds the plan the
user reviews. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.paths import ENVS_DIR, MINIFORGE_DIR
from gpuwizard.core.plan import Plan
from gpuwizard.core.selection import (
    DriverChoice,
    EnvChoice,
    EnvKind,
    Extras,
    PythonSource,
    Selection,
    TorchChoice,
)
from gpuwizard.core.version import Version
from gpuwizard.recommend.os_support import OsRelease, match_os
from gpuwizard.recommend.result import Recommendation
from gpuwizard.recommend.table import CompatTable
from gpuwizard.steps import build_plan

_ENV_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class OptionsError(ValueError):
    """An option the user gave cannot be used; the message names it."""


@dataclass(frozen=True)
class Options:
    """What the user chooses beyond the recommendation."""

    env_kind: EnvKind = "venv"
    env_name: str = "pytorch"
    needs_nvcc: bool = False
    cudnn: bool = False
    docker: bool = False
    dcgm: bool = False
    nccl: bool = False
    hold_driver: bool = False
    persistence: bool = True


def env_path(options: Options) -> str:
    if not _ENV_NAME.fullmatch(options.env_name):  # fullmatch: `$` lets a final newline through
        raise OptionsError(
            f"environment name {options.env_name!r}: use letters, digits, '.', '_' or '-' "
            "(at most 64), starting with a letter or digit"
        )
    base = f"{MINIFORGE_DIR}/envs" if options.env_kind == "conda" else ENVS_DIR
    return f"{base}/{options.env_name}"


def python_source(
    os_row: OsRelease | None, recommendation: Recommendation
) -> tuple[str, PythonSource]:
    """The interpreter for the environment: system, a distribution package, or standalone."""
    wanted = recommendation.python
    if wanted.action == "use_system":
        return wanted.version, "system"
    if wanted.pinned:  # the engine offers a pinned Python only where the OS's archive has it
        return wanted.version, "os-package"
    low, high = (Version.parse(v) for v in recommendation.torch.python_range)
    packaged = [
        v for v in (os_row.extra_pythons if os_row else ()) if low <= Version.parse(v) <= high
    ]
    if packaged:
        return max(packaged, key=Version.parse), "os-package"
    return wanted.version, "standalone"


def selection_for(
    facts: HostFacts, recommendation: Recommendation, options: Options, table: CompatTable
) -> Selection:
    os = facts.os
    os_row = match_os(table, os.id, os.version_id, os.id_like, os.version_codename) if os else None
    if os_row is None and not facts.platform.wsl:
        raise OptionsError("this OS is not supported for installation")
    d, t = recommendation.driver, recommendation.torch
    version, source = python_source(os_row, recommendation)
    if options.env_kind == "conda":
        source = "system"  # conda brings its own interpreter
    cuda = t.variant[2:-1] + "." + t.variant[-1]
    return Selection(
        family="rhel" if os_row and os_row.driver_source == "cuda-repo-dnf" else "debian",
        cuda_repo=os_row.cuda_repo if os_row else "",
        arch=facts.platform.arch,
        driver=DriverChoice(
            d.action,
            d.branch,
            d.version,
            d.flavor,
            d.core_packages,
            d.source,
            d.module_stream,
            d.signed_modules,
            d.version_lock,
        ),
        torch=TorchChoice(t.version, t.variant, t.index_url, t.torchvision, t.torchaudio),
        env=EnvChoice(options.env_kind, env_path(options), version, source),
        extras=Extras(
            cuda_toolkit=cuda if options.needs_nvcc else None,
            cudnn=options.cudnn,
            docker=options.docker,
            dcgm=options.dcgm,
            nccl=options.nccl,
            hold_driver=options.hold_driver,
            persistence=options.persistence,
        ),
        wsl=facts.platform.wsl,
    )


def summary(recommendation: Recommendation, selection: Selection) -> tuple[str, ...]:
    d, t, e = selection.driver, selection.torch, selection.env
    driver = (
        f"driver: keep {d.version}"
        if d.action == "keep"
        else f"driver: {d.action} R{d.branch} ({d.flavor})"
    )
    return (
        driver,
        f"pytorch: torch {t.version} ({t.variant}), torchvision {t.torchvision or 'UNCONFIRMED'}",
        f"environment: {e.kind} {e.path} (Python {e.python}, {e.python_source})",
        FIT[recommendation.status],
    )


FIT = {
    "ok": "fit: as the machine is",
    "ok_after_changes": "fit: after the changes this plan makes first",
}
"""The recommendation's status as the plan's summary says it (Review, Done, every export)."""


def plan_for(
    facts: HostFacts, recommendation: Recommendation, options: Options, table: CompatTable
) -> tuple[Selection, Plan]:
    selection = selection_for(facts, recommendation, options, table)
    return selection, build_plan(selection, facts, summary(recommendation, selection))
