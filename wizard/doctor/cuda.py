"""The guide's "CUDA version mismatch", made checkable: the CUDA the driver supports, the CUDA
the toolkit (nvcc) is, the CUDA the installed torch was built for, and whether that torch build
has kernels for these GPUs ("no kernel image is available for execution on the device").

Rules (compat.md b.1, a.2): a torch build for CUDA X.Y runs on a driver whose CUDA is at least
X.Y, or of the same major through minor-version compatibility when the driver is at least that
major's floor (no PTX JIT then); extensions build only when nvcc's major equals torch's (a minor
difference warns). Pure.
"""

from __future__ import annotations

from gpuwizard.core.facts import HostFacts, NvmlOk
from gpuwizard.core.version import Version, at_least
from gpuwizard.doctor.driver import applies
from gpuwizard.doctor.findings import Finding, Severity
from gpuwizard.doctor.observed import Observed, TorchBuild
from gpuwizard.recommend.rules import covers
from gpuwizard.recommend.table import CompatTable

SOURCE = "compat.md b.1, b.2; torch.utils.cpp_extension"


def _driver_problem(torch: TorchBuild, nvml: NvmlOk, table: CompatTable) -> tuple[str, str] | None:
    """(severity, sentence) when the driver cannot run this torch build well."""
    assert torch.cuda is not None
    want, have = Version.parse(torch.cuda), Version.parse(nvml.cuda_driver_version)
    if want <= have:
        return None
    floor = table.mvc_floor(torch.cuda)
    if want.major == have.major and floor and at_least(nvml.driver_version, floor):
        return "warn", (
            f"torch is built for CUDA {torch.cuda}, newer than the driver's {have}: it runs "
            "through minor-version compatibility, without PTX JIT"
        )
    need = f" (CUDA {want.major}.x needs driver {floor} or newer)" if floor else ""
    return "problem", (
        f"torch is built for CUDA {torch.cuda} but driver {nvml.driver_version} supports CUDA "
        f"only up to {have}{need}"
    )


def _nvcc_problem(torch: TorchBuild, nvcc: str) -> tuple[str, str] | None:
    assert torch.cuda is not None
    want, have = Version.parse(torch.cuda), Version.parse(nvcc)
    if want.parts[:2] == have.parts[:2]:
        return None
    if want.major != have.major:
        return "problem", (
            f"nvcc is CUDA {nvcc} but torch is built for {torch.cuda}: C++/CUDA extensions "
            'refuse to build ("The detected CUDA version mismatches")'
        )
    return "warn", f"nvcc is CUDA {nvcc}, torch {torch.cuda}: extensions build, with a warning"


def _toolkit_vs_driver(nvcc: str, nvml: NvmlOk | None) -> tuple[str, str] | None:
    if nvml is None or Version.parse(nvcc).major <= Version.parse(nvml.cuda_driver_version).major:
        return None
    return "warn", (
        f"nvcc is CUDA {nvcc}, a newer major than the driver's {nvml.cuda_driver_version}: "
        "what it builds will not run here"
    )


Trouble = tuple[str, str, str]
"""(what disagrees: "driver" | "nvcc" | "toolkit", severity, sentence)."""


def _troubles(
    torch: TorchBuild | None, nvcc: str | None, nvml: NvmlOk | None, table: CompatTable
) -> list[Trouble]:
    found: list[tuple[str, tuple[str, str] | None]] = []
    if torch is not None and torch.cuda is not None:  # None: a CPU build, or not known
        found.append(("driver", _driver_problem(torch, nvml, table) if nvml else None))
        found.append(("nvcc", _nvcc_problem(torch, nvcc) if nvcc else None))
    if nvcc:
        found.append(("toolkit", _toolkit_vs_driver(nvcc, nvml)))
    return [(kind, *trouble) for kind, trouble in found if trouble is not None]


def _fix(troubles: list[Trouble], torch: TorchBuild | None, nvml: NvmlOk | None) -> str:
    kinds = {kind for kind, _, _ in troubles}
    fixes = []
    if "driver" in kinds:
        cuda = nvml.cuda_driver_version if nvml else "the driver's CUDA"
        fixes.append(
            "upgrade the driver (`gpuwizard recommend --keep-driver` shows what runs on this "
            f"one), or install the torch build for CUDA {cuda} or older"
        )
    if "nvcc" in kinds and torch and torch.cuda:
        fixes.append(
            f"install the CUDA {torch.cuda} toolkit (cuda-toolkit-{torch.cuda.replace('.', '-')}) "
            f"and build with CUDA_HOME=/usr/local/cuda-{torch.cuda}"
        )
    if "toolkit" in kinds:
        fixes.append("install the toolkit that matches the driver's CUDA, or upgrade the driver")
    text = "; ".join(fixes)
    return f"{text[0].upper()}{text[1:]}." if text else ""


def check_cuda_versions(facts: HostFacts, seen: Observed, table: CompatTable) -> Finding | None:
    if not facts.hardware.gpus:
        return None
    nvml = facts.boot.nvml if isinstance(facts.boot.nvml, NvmlOk) else None
    torch, nvcc = seen.torch, seen.toolkit.version if seen.toolkit else None
    if torch is None and nvcc is None:
        if nvml is None:
            return None  # nothing CUDA is installed yet: nothing can disagree
        why = seen.why_unread("torch") or f"no torch in {seen.env}, no nvcc"
        return Finding(
            "cuda-versions", "unknown", "CUDA versions not checked",
            f"No PyTorch and no CUDA toolkit were found to compare with the driver ({why}).",
            "If torch lives in another environment, point the doctor at it: "
            "gpuwizard doctor --env /path/to/env.",
            (why,), SOURCE,
        )  # fmt: skip
    parts = [f"driver {nvml.cuda_driver_version}" if nvml else "driver none",
             f"toolkit {nvcc or 'none'}",
             f"torch {torch.cuda or ('CPU' if torch.build_known else '?')}" if torch else "torch none"]  # fmt: skip
    evidence = [f"driver {nvml.driver_version} supports CUDA {nvml.cuda_driver_version}" if nvml
                else "no driver answers (NVML unavailable)"]  # fmt: skip
    if seen.toolkit:
        evidence.append(f"nvcc {seen.toolkit.version} at {seen.toolkit.path}")
    if torch:
        build = torch.cuda or (
            "none: CPU build" if torch.build_known else "unknown: no torch/version.py"
        )
        evidence.append(f"torch {torch.version} in {torch.env} (CUDA {build})")
    title = f"CUDA: {', '.join(parts)}"
    if torch and torch.cuda is None and torch.build_known and applies(facts):
        return Finding(
            "cuda-versions", "problem", title,
            f"torch {torch.version} in {torch.env} is a CPU-only build: it never uses the GPUs.",
            f"Reinstall torch from a CUDA index (gpuwizard recommend names one) into {torch.env}.",
            tuple(evidence), SOURCE,
        )  # fmt: skip
    troubles = _troubles(torch, nvcc, nvml, table)
    if not troubles:
        return Finding(
            "cuda-versions", "ok", title,
            "The driver runs the CUDA that torch and nvcc were built for.",
            evidence=tuple(evidence), source=SOURCE,
        )  # fmt: skip
    severity: Severity = "problem" if any(lvl == "problem" for _, lvl, _ in troubles) else "warn"
    return Finding(
        "cuda-versions",
        severity,
        title,
        "; ".join(sentence for _, _, sentence in troubles) + ".",
        _fix(troubles, torch, nvml),
        tuple(evidence),
        SOURCE,
    )


def check_torch_gpus(facts: HostFacts, seen: Observed, table: CompatTable) -> Finding | None:
    """The installed torch build has kernels for every GPU's architecture (sm)."""
    torch = seen.torch
    if torch is None or torch.variant is None or not facts.hardware.gpus:
        return None
    build = table.build(torch.variant, torch.release, facts.platform.arch)
    if build is None:
        return Finding(
            "torch-gpus", "unknown", f"torch {torch.version}: GPU coverage not known",
            f"gpuwizard's table has no {torch.variant} build of torch {torch.release}, so it "
            "cannot say which GPU architectures it ships.",
            evidence=(f"torch {torch.version} in {torch.env}",), source="compat.md a.2",
        )  # fmt: skip
    shipped = ", ".join(f"sm_{a.replace('.', '')}" for a in build.arches)
    models = {g.model.device_id: g.model for g in facts.hardware.gpus}.values()
    missing = [
        m for m in models if m.compute_capability and not covers(build.arches, m.compute_capability)
    ]
    evidence = (f"torch {torch.version} ({torch.variant}) ships {shipped}",)
    if not missing:
        return Finding(
            "torch-gpus", "ok", f"torch {torch.version} has kernels for every GPU",
            "The build ships code for each GPU's architecture.", evidence=evidence,
            source="compat.md a.2",
        )  # fmt: skip
    names = ", ".join(f"{m.name} ({m.sm})" for m in missing)
    return Finding(
        "torch-gpus",
        "problem",
        f"torch {torch.version} has no kernels for {names}",
        f"The {torch.variant} build of torch {torch.release} ships {shipped}: on {names} every "
        'CUDA call fails with "no kernel image is available for execution on the device".',
        "Install a torch build whose variant covers these GPUs: `gpuwizard recommend` picks one "
        "(cu126 for Maxwell, Pascal and Volta; cu128 or newer for Blackwell).",
        evidence,
        "compat.md a.2, c.3",
    )
