"""The PyTorch environments a person already has, each against this machine's driver and GPUs.

"CUDA driver version is insufficient" is the field's most common error: a torch built for a
newer CUDA than the driver runs. Each environment detection found (``HostFacts.python.
torch_envs``) gets one finding: its CUDA build against the driver's CUDA, and its architectures
against the GPUs': the environment's own arch list where the doctor could run its Python
(``Observed.arch_lists``), else gpuwizard's table for that release and build. Pure.
"""

from __future__ import annotations

from gpuwizard.core.facts import HostFacts, NvmlOk
from gpuwizard.core.torch_envs import TorchEnv
from gpuwizard.doctor.findings import Finding
from gpuwizard.doctor.observed import ArchList, Observed
from gpuwizard.recommend.existing import TorchFit, fitting_variant, judge_torch_env
from gpuwizard.recommend.result import PYTORCH_INDEX
from gpuwizard.recommend.table import CompatTable

SOURCE = "compat.md a.2, b.1; torch.cuda.get_arch_list()"


def _arch_evidence(fit: TorchFit, probe: ArchList | None) -> str:
    if fit.gpus.source == "probe" and probe is not None:
        return f"arch list from {probe.python} -I (its own torch): {' '.join(probe.flags or ())}"
    why = probe.why if probe and probe.why else "not run"
    return f"arch list from gpuwizard's table for this build ({why})"


def _evidence(env: TorchEnv, fit: TorchFit, probe: ArchList | None) -> tuple[str, ...]:
    return (
        env.words(),
        f"found as: {', '.join(env.found_by)}; python {env.python}",
        fit.driver.sentence,
        fit.gpus.sentence,
        _arch_evidence(fit, probe),
    )


def _ok_title(env: TorchEnv, facts: HostFacts) -> str:
    nvml = facts.boot.nvml
    driver = (
        f"driver {nvml.driver_version} (CUDA {nvml.cuda_driver_version})"
        if isinstance(nvml, NvmlOk)
        else "the driver"
    )
    sms = ", ".join(dict.fromkeys(g.model.sm or "?" for g in facts.hardware.gpus))
    return f"torch {env.torch} in {env.path}: CUDA {env.torch_cuda} on {driver}, {sms} covered"


def _fix(env: TorchEnv, fit: TorchFit, facts: HostFacts, table: CompatTable) -> str:
    """The two ways out: a driver that runs this build, or the build this driver runs."""
    if env.torch_cuda is None and env.build_known:
        return (
            f"Install a CUDA build into {env.path}: {env.python} -m pip install torch=={env.release} "
            f"--index-url {PYTORCH_INDEX}/<cuXYZ> (gpuwizard recommend names the build)."
        )
    variant = fitting_variant(env, facts, table)
    swap = (
        f"install the {variant} build into it: {env.python} -m pip install torch=={env.release} "
        f"--index-url {PYTORCH_INDEX}/{variant}"
        if variant
        else "install a torch build this driver runs (gpuwizard recommend --keep-driver names one)"
    )
    if fit.driver.verdict == "does-not-fit" and fit.driver.needs_driver:
        return (
            f"Upgrade the driver to {fit.driver.needs_driver} or newer (gpuwizard recommend plans "
            f"it), or {swap}."
        )
    return f"{swap[0].upper()}{swap[1:]}."


def torch_env_finding(
    env: TorchEnv, facts: HostFacts, seen: Observed, table: CompatTable
) -> Finding:
    probe = seen.arch_list(env.python)
    fit = judge_torch_env(env, facts, table, probe.flags if probe else None)
    evidence = _evidence(env, fit, probe)
    if fit.verdict == "fits":
        explanation = "Its CUDA build runs on this driver and it has kernels for every GPU here."
        if fit.driver.minor_compat:
            explanation += " It runs through minor-version compatibility: no PTX JIT."
        return Finding(
            "torch-env",
            "ok",
            _ok_title(env, facts),
            explanation,
            evidence=evidence,
            source=SOURCE,
        )
    if fit.verdict == "unknown":
        return Finding(
            "torch-env",
            "unknown",
            f"torch {env.torch} in {env.path}: not known to fit",
            f"{'; '.join(fit.reasons)}.",
            "",
            evidence,
            SOURCE,
        )
    return Finding(
        "torch-env",
        "problem",
        f"torch {env.torch} in {env.path} does not run here",
        f"{'; '.join(fit.reasons)}.",
        _fix(env, fit, facts, table),
        evidence,
        SOURCE,
    )


def check_torch_envs(facts: HostFacts, seen: Observed, table: CompatTable) -> tuple[Finding, ...]:
    """One finding per PyTorch environment found on the machine (none without a GPU)."""
    if not facts.hardware.gpus or (facts.platform.wsl and not isinstance(facts.boot.nvml, NvmlOk)):
        return ()
    return tuple(torch_env_finding(env, facts, seen, table) for env in facts.python.torch_envs)
