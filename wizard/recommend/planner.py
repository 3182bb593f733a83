"""From a recommendation and the person's request to the Selection the steps install, and the Plan.

The recommender answers "what fits"; the request says the rest (venv or conda, its name, the
optional parts). This module joins the two into a ``Selection`` (which keeps the request), picks
where the environment's Python comes from (system, a distribution package, or a standalone
CPython), and builds the plan the person reviews. Pure.
"""

from __future__ import annotations

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.paths import ENVS_DIR, MINIFORGE_DIR
from gpuwizard.core.plan import Plan
from gpuwizard.core.request import EnvKind, SetupRequest, form_problem, wish_named
from gpuwizard.core.selection import DriverChoice, EnvChoice, PythonSource, Selection, TorchChoice
from gpuwizard.core.version import Version
from gpuwizard.recommend.existing import env_at
from gpuwizard.recommend.os_support import OsRelease, match_os
from gpuwizard.recommend.result import Recommendation
from gpuwizard.recommend.table import CompatTable
from gpuwizard.steps import build_plan


class OptionsError(ValueError):
    """An option the user gave cannot be used; the message names it."""


def env_path(request: SetupRequest) -> str:
    """Where the environment goes; the name becomes a path, so its form is checked again here."""
    why = form_problem(wish_named("env_name"), request.env_name)
    if why is not None:
        raise OptionsError(f"environment name {request.env_name!r}: {why}")
    base = f"{MINIFORGE_DIR}/envs" if request.env_kind == "conda" else ENVS_DIR
    return f"{base}/{request.env_name}"


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
    facts: HostFacts, recommendation: Recommendation, request: SetupRequest, table: CompatTable
) -> Selection:
    os = facts.os
    os_row = match_os(table, os.id, os.version_id, os.id_like, os.version_codename) if os else None
    if os_row is None and not facts.platform.wsl:
        raise OptionsError("this OS is not supported for installation")
    d, t = recommendation.driver, recommendation.torch
    if d.action != "keep" and facts.platform.container:
        raise OptionsError(
            f"in a {facts.platform.container} container the driver belongs to the host: "
            f"install R{d.branch} there, not here"
        )
    version, source = python_source(os_row, recommendation)
    if request.env_kind == "conda":
        source = "system"  # conda brings its own interpreter
    torch = TorchChoice(t.version, t.variant, t.index_url, t.torchvision, t.torchaudio)
    env = EnvChoice(request.env_kind, env_path(request), version, source)
    if request.use_env:
        torch, env = existing_choice(facts, request.use_env)
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
        torch=torch,
        env=env,
        request=request,
        wsl=facts.platform.wsl,
    )


def existing_choice(facts: HostFacts, path: str) -> tuple[TorchChoice, EnvChoice]:
    """The torch and the environment already at ``path``, used as they are (``--use-env``)."""
    env = env_at(facts, path)
    if env is None or env.variant is None:
        raise OptionsError(f"--use-env {path}: no PyTorch with a CUDA build there")
    kind: EnvKind = "conda" if env.kind == "conda" else "venv"
    python = env.python_version or facts.python.system_python or "3"
    # The release, as the verification reports it ("2.11.0"); the build is the variant.
    torch = TorchChoice(env.release, env.variant, "", env.torchvision, env.torchaudio)
    return torch, EnvChoice(kind, env.path, python, "system", existing=env.python)


def summary(recommendation: Recommendation, selection: Selection) -> tuple[str, ...]:
    d, t, e = selection.driver, selection.torch, selection.env
    driver = (
        f"driver: keep {d.version}"
        if d.action == "keep"
        else f"driver: {d.action} R{d.branch} ({d.flavor})"
    )
    if e.existing:
        vision = f", torchvision {t.torchvision}" if t.torchvision else ", no torchvision"
        build = "" if "+" in t.version else f" ({t.variant})"
        return (
            driver,
            f"pytorch: torch {t.version}{build}{vision}, already here: used as it is",
            f"environment: {e.path} (Python {e.python}, found here: nothing is installed in it)",
            FIT[recommendation.status],
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
    facts: HostFacts, recommendation: Recommendation, request: SetupRequest, table: CompatTable
) -> tuple[Selection, Plan]:
    selection = selection_for(facts, recommendation, request, table)
    return selection, build_plan(selection, facts, summary(recommendation, selection))
