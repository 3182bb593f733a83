"""Whether a PyTorch already on the machine fits its GPUs and its driver. Pure.

The one judge of an existing environment (``HostFacts.python.torch_envs``): the doctor's
findings, ``bench``'s choice of environment, and a "use the environment that is here" choice
all ask it. A torch build for CUDA X.Y runs on a driver whose CUDA is at least X.Y, or of the
same major through minor-version compatibility (no PTX JIT) when the driver is at least that
major's floor (compat.md b.1); it runs on a GPU when it ships that GPU's architecture, or an
older minor of its major (compat.md a.2): as the environment's own arch list says when its
Python was asked (the doctor asks), else as gpuwizard's table lists for PyPI's and
download.pytorch.org's builds of that release.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from gpuwizard.core.facts import HostFacts, Nvml, NvmlOk
from gpuwizard.core.gpus import GpuModel
from gpuwizard.core.request import SetupRequest, wish_named
from gpuwizard.core.torch_envs import TorchEnv
from gpuwizard.core.version import Version, at_least, is_version
from gpuwizard.recommend.rules import covers
from gpuwizard.recommend.table import CompatTable

Verdict = Literal["fits", "does-not-fit", "unknown"]
ArchSource = Literal["probe", "table", "none"]

_ARCH_FLAG = re.compile(r"^(sm|compute)_(\d{1,3})[a-z]?$")


@dataclass(frozen=True)
class DriverFit:
    """The driver against the CUDA torch was built for."""

    verdict: Verdict
    sentence: str
    """One line with the numbers: "built for CUDA 13.0; driver 580.159.04 runs up to CUDA 13.0"."""
    minor_compat: bool = False
    """It runs only through minor-version compatibility (no PTX JIT)."""
    needs_driver: str | None = None
    """When it does not fit: the oldest driver that runs this build ("580.65.06")."""


@dataclass(frozen=True)
class GpuFit:
    """The build's architectures against the GPUs' compute capabilities."""

    verdict: Verdict
    sentence: str
    source: ArchSource
    """Where the architectures came from: the environment's own torch (probe), gpuwizard's
    table for this release and CUDA build (table), or nowhere (none)."""
    missing: tuple[str, ...] = ()
    """The GPUs it has no kernels for, as "H200 SXM 141GB (sm_90)"."""


@dataclass(frozen=True)
class TorchFit:
    """An existing environment judged against this machine."""

    env: TorchEnv
    driver: DriverFit
    gpus: GpuFit

    @property
    def fits(self) -> bool:
        """Known to run here: the driver runs its CUDA and it has kernels for every GPU."""
        return self.driver.verdict == "fits" and self.gpus.verdict == "fits"

    @property
    def usable(self) -> bool:
        """It can be used as it is (``--use-env``): it fits, and the isolated Python (-I) that
        verifies and benchmarks it imports it (a user's own site-packages it never does)."""
        return self.fits and self.env.kind != "user"

    @property
    def verdict(self) -> Verdict:
        verdicts = {self.driver.verdict, self.gpus.verdict}
        if "does-not-fit" in verdicts:
            return "does-not-fit"
        return "fits" if verdicts == {"fits"} else "unknown"

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why it does not fit, or cannot be said to, one line each; () when it fits."""
        return tuple(p.sentence for p in (self.driver, self.gpus) if p.verdict != "fits")

    @property
    def summary(self) -> str:
        """ "fits: built for CUDA 13.0; driver ... ; ships sm_90" or "does not fit: ..."."""
        said = {"fits": "fits", "does-not-fit": "does not fit", "unknown": "not known to fit"}
        parts = self.reasons or (self.driver.sentence, self.gpus.sentence)
        return f"{said[self.verdict]}: {'; '.join(parts)}"


def judge_driver(env: TorchEnv, nvml: Nvml, table: CompatTable) -> DriverFit:
    if env.torch_cuda is None:
        if env.build_known:
            return DriverFit(
                "does-not-fit", f"torch {env.torch} is a CPU-only build: it never uses the GPUs"
            )
        return DriverFit(
            "unknown", f"torch {env.torch}: its CUDA build is unknown (no torch/version.py)"
        )
    if not isinstance(nvml, NvmlOk):
        return DriverFit(
            "unknown", f"built for CUDA {env.torch_cuda}; no driver answers ({nvml.reason})"
        )
    want, have = Version.parse(env.torch_cuda), Version.parse(nvml.cuda_driver_version)
    runs = f"driver {nvml.driver_version} runs up to CUDA {nvml.cuda_driver_version}"
    if want <= have:
        return DriverFit("fits", f"built for CUDA {env.torch_cuda}; {runs}")
    floor = table.driver_floor(env.torch_cuda)
    if want.major == have.major and floor and at_least(nvml.driver_version, floor):
        return DriverFit(
            "fits",
            f"built for CUDA {env.torch_cuda}, newer than the driver's {have}: "
            "it runs through minor-version compatibility, without PTX JIT",
            True,
        )
    need = f"driver {floor} or newer" if floor else f"a driver for CUDA {env.torch_cuda}"
    return DriverFit(
        "does-not-fit",
        f"{env.variant} (CUDA {env.torch_cuda}) needs {need}; this machine has {nvml.driver_version} "
        f"(CUDA {nvml.cuda_driver_version})",
        needs_driver=floor,
    )


def arch_capability(flag: str) -> tuple[str, bool] | None:
    """ "sm_90" -> ("9.0", False); "compute_120" -> ("12.0", True) (PTX); None otherwise."""
    found = _ARCH_FLAG.match(flag)
    if found is None:
        return None
    digits = found.group(2)
    return f"{int(digits[:-1] or '0')}.{digits[-1]}", found.group(1) == "compute"


def flags_cover(flags: Sequence[str], compute_capability: str) -> bool:
    """An arch list (torch.cuda.get_arch_list()) serves a GPU: a cubin of its major at or below
    its minor, or PTX at or below its capability (the driver compiles that for it)."""
    have = Version.parse(compute_capability)
    for flag in flags:
        parsed = arch_capability(flag)
        if parsed is None:
            continue
        arch, ptx = parsed
        if (ptx and Version.parse(arch) <= have) or (
            not ptx and covers((arch,), compute_capability)
        ):
            return True
    return False


def _sm(capability: str) -> str:
    return f"sm_{capability.replace('.', '')}"


def judge_gpus(
    env: TorchEnv,
    gpus: Sequence[GpuModel],
    table: CompatTable,
    platform: str,
    probed: Sequence[str] | None = None,
) -> GpuFit:
    """``probed``: the arch list the environment's own torch reported, when it was asked."""
    models = [g for g in {g.device_id: g for g in gpus}.values() if g.compute_capability]
    if env.variant is None:
        return GpuFit(
            "does-not-fit" if env.build_known else "unknown",
            f"torch {env.torch}: no CUDA kernels known",
            "none",
        )
    if not models:
        return GpuFit("unknown", "no NVIDIA GPU with a known architecture here", "none")
    source: ArchSource
    if probed:
        missing = [g for g in models if not flags_cover(probed, g.compute_capability or "")]
        shipped, source = " ".join(probed), "probe"
    else:
        build = table.build(env.variant, env.release, platform) if is_version(env.release) else None
        if build is None:
            return GpuFit(
                "unknown",
                f"gpuwizard's table has no {env.variant} build of torch {env.release}: "
                "its architectures are unknown until its Python is asked (gpuwizard doctor)",
                "none",
            )
        missing = [g for g in models if not covers(build.arches, g.compute_capability or "")]
        shipped, source = " ".join(_sm(a) for a in build.arches), "table"
    wanted = ", ".join(_sm(g.compute_capability or "") for g in models)
    if not missing:
        return GpuFit("fits", f"ships {shipped}: covers {wanted}", source)
    names = tuple(f"{g.name} ({_sm(g.compute_capability or '')})" for g in missing)
    return GpuFit(
        "does-not-fit", f"ships {shipped}: no kernels for {', '.join(names)}", source, names
    )


def judge_torch_env(
    env: TorchEnv, facts: HostFacts, table: CompatTable, probed: Sequence[str] | None = None
) -> TorchFit:
    """Does this environment's torch run on this machine's driver and GPUs?"""
    gpus = [g.model for g in facts.hardware.gpus]
    return TorchFit(
        env,
        judge_driver(env, facts.boot.nvml, table),
        judge_gpus(env, gpus, table, facts.platform.arch, probed),
    )


def _release_key(env: TorchEnv) -> tuple[int, ...]:
    found = re.match(r"\d+(?:\.\d+)*", env.release)
    return Version.parse(found.group(0)).parts if found else ()


def ranked(facts: HostFacts, table: CompatTable) -> list[TorchFit]:
    """Every existing environment, best first: fits, has torchvision (the benchmark needs it),
    is the session's python3, newest torch; otherwise in the order detection found them."""
    fits = [judge_torch_env(env, facts, table) for env in facts.python.torch_envs]
    order = {"fits": 0, "unknown": 1, "does-not-fit": 2}
    return sorted(
        fits,
        key=lambda f: (
            order[f.verdict],
            f.env.torchvision is None,
            not f.env.on_path,
            tuple(-p for p in _release_key(f.env)),
        ),
    )


def best_torch_env(facts: HostFacts, table: CompatTable) -> TorchFit | None:
    """The existing environment to use first, with its judgement; None when there is none."""
    found = ranked(facts, table)
    return found[0] if found else None


def fitting_variant(env: TorchEnv, facts: HostFacts, table: CompatTable) -> str | None:
    """The newest CUDA build of this environment's torch release that this machine's driver and
    GPUs run (the fix for a build the driver cannot run); None when there is none."""
    release = table.torch(env.release)
    if release is None:
        return None
    builds = sorted(release.builds_for(facts.platform.arch), key=_variant_key, reverse=True)
    for variant in builds:
        cuda = f"{variant[2:-1]}.{variant[-1]}"
        candidate = dataclasses.replace(env, torch=env.release, torch_cuda=cuda, build_known=True)
        if judge_torch_env(candidate, facts, table).fits:
            return variant
    return None


def _variant_key(variant: str) -> tuple[int, int]:
    digits = variant.removeprefix("cu")
    return (int(digits[:-1]), int(digits[-1])) if digits.isdigit() and len(digits) >= 2 else (0, 0)


def env_at(facts: HostFacts, path: str) -> TorchEnv | None:
    """The PyTorch environment detection found at ``path`` (its prefix)."""
    return next((e for e in facts.python.torch_envs if e.path == path), None)


USE_ENV_DECIDES = ("torch", "variant", "python", "env_kind", "env_name")
"""The wishes an environment that is here answers itself: asking for them too contradicts it."""


def use_env_problem(facts: HostFacts, table: CompatTable, request: SetupRequest) -> str | None:
    """Why the environment the request asks to use (``--use-env``) cannot be used as it is:
    there is none at that path, a wish it answers itself is asked for too, it is a user's
    site-packages (the isolated Python that verifies and benchmarks it never imports those),
    or its torch does not run here; None: it can be used (or none is asked for)."""
    path = request.use_env
    if path is None:
        return None
    env = env_at(facts, path)
    if env is None:
        found = ", ".join(e.path for e in facts.python.torch_envs) or "none was found"
        return f"--use-env {path}: no PyTorch environment there (found: {found})"
    default = SetupRequest()
    if asked := [
        wish_named(n).flag for n in USE_ENV_DECIDES if request.value(n) != default.value(n)
    ]:
        return f"--use-env uses the PyTorch that is there as it is: drop {', '.join(asked)}"
    if env.kind == "user":
        return (
            f"--use-env {path}: a user's own site-packages is not imported by the isolated "
            "Python (-I) that verifies and benchmarks it; use a venv or conda environment"
        )
    fit = judge_torch_env(env, facts, table)
    if not fit.fits:
        return f"--use-env {path}: its PyTorch cannot be used here: {'; '.join(fit.reasons)}"
    return None
