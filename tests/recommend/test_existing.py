"""Whether a PyTorch already on the machine fits its driver and GPUs (recommend/existing.py).

The judge the doctor, ``bench`` and a "use the environment that is here" choice share: CUDA
build against the driver's CUDA (with minor-version compatibility), architectures against the
GPUs' (the environment's own arch list when it was asked, else gpuwizard's table).
"""

from __future__ import annotations

import dataclasses

import pytest

from gpuwizard.core.facts import HostFacts, NvmlUnavailable
from gpuwizard.core.torch_envs import TorchEnv
from gpuwizard.recommend.existing import (
    arch_capability,
    best_torch_env,
    fitting_variant,
    flags_cover,
    judge_torch_env,
    ranked,
)
from gpuwizard.recommend.table import CompatTable
from tests.conftest import facts_of

H200_VM = "h200-vm-ubuntu2404-preinstalled"
RTX4090 = "rtx4090-ubuntu2204-driver570-torch-cu130"


def env(
    torch: str, cuda: str | None, *, path: str = "/opt/x/.venv", known: bool = True, **more: object
) -> TorchEnv:
    return TorchEnv(path, "venv", f"{path}/bin/python", "3.12", f"{path}/lib/python3.12/site-packages",
                    torch, cuda, known, **more)  # type: ignore[arg-type]  # fmt: skip


def with_envs(facts: HostFacts, *envs: TorchEnv) -> HostFacts:
    return dataclasses.replace(facts, python=dataclasses.replace(facts.python, torch_envs=envs))


@pytest.mark.parametrize(
    ("profile", "torch", "cuda", "verdict", "words"),
    [
        pytest.param(H200_VM, "2.11.0+cu130", "13.0", "fits",
                     ["built for CUDA 13.0; driver 580.159.04 runs up to CUDA 13.0", "covers sm_90"], id="the H200's own torch"),
        pytest.param(RTX4090, "2.11.0", "13.0", "does-not-fit",
                     ["cu130 (CUDA 13.0) needs driver 580 or newer; this machine has 570.133.20 (CUDA 12.8)"], id="cu130 on R570"),
        pytest.param(RTX4090, "2.11.0+cu128", "12.8", "fits", ["covers sm_89"], id="cu128 on R570"),
        pytest.param("h200-ubuntu2404-driver570", "2.8.0+cu129", "12.9", "fits",
                     ["minor-version compatibility"], id="a newer minor through MVC"),
        pytest.param(H200_VM, "2.14.1+cpu", None, "does-not-fit", ["CPU-only build"], id="a CPU build"),
        pytest.param(H200_VM, "1.13.1+cu117", "11.7", "does-not-fit", ["no kernels for H200 SXM 141GB (sm_90)"], id="a build without Hopper kernels"),
        pytest.param(H200_VM, "2.99.0+cu130", "13.0", "unknown", ["gpuwizard's table has no cu130 build of torch 2.99.0"], id="a release the table lacks"),
    ],
)  # fmt: skip
def test_judge(
    table: CompatTable, profile: str, torch: str, cuda: str | None, verdict: str, words: list[str]
) -> None:
    fit = judge_torch_env(env(torch, cuda), facts_of(profile), table)
    said = f"{fit.summary} | {fit.driver.sentence} | {fit.gpus.sentence}"
    assert fit.verdict == verdict, said
    for word in words:
        assert word in said, said


def test_a_build_that_cannot_be_known_is_not_known_to_fit(table: CompatTable) -> None:
    fit = judge_torch_env(env("2.5.1", None, known=False), facts_of(H200_VM), table)
    assert fit.verdict == "unknown" and not fit.fits
    assert "its CUDA build is unknown" in fit.reasons[0]


def test_without_a_driver_nothing_is_known_to_fit(table: CompatTable) -> None:
    facts = facts_of(H200_VM)
    facts = dataclasses.replace(
        facts,
        boot=dataclasses.replace(facts.boot, nvml=NvmlUnavailable("no NVIDIA driver is installed")),
    )
    fit = judge_torch_env(env("2.11.0+cu130", "13.0"), facts, table)
    assert fit.driver.verdict == "unknown" and "no driver answers" in fit.driver.sentence


def test_the_environments_own_arch_list_wins_over_the_table(table: CompatTable) -> None:
    """A build made for one architecture (TORCH_CUDA_ARCH_LIST=8.0): the table would say it
    covers the H200, the torch itself says it does not."""
    fit = judge_torch_env(env("2.11.0+cu130", "13.0"), facts_of(H200_VM), table, probed=("sm_80",))
    assert (fit.gpus.verdict, fit.gpus.source) == ("does-not-fit", "probe")
    ptx = judge_torch_env(
        env("2.11.0+cu130", "13.0"), facts_of(H200_VM), table, probed=("sm_80", "compute_80")
    )
    assert (ptx.gpus.verdict, ptx.gpus.source) == ("fits", "probe")


@pytest.mark.parametrize(
    ("flags", "capability", "covered"),
    [
        (("sm_90",), "9.0", True),
        (("sm_80", "sm_86"), "8.9", True),  # a cubin of the major at or below the minor
        (("sm_86",), "8.0", False),
        (("sm_90a",), "9.0", True),
        (("compute_90",), "12.0", True),  # PTX is compiled for newer GPUs
        (("compute_120",), "9.0", False),
        (("sm_100", "sm_120"), "9.0", False),
        (("nonsense", ""), "9.0", False),
    ],
)
def test_arch_flags_cover_a_gpu(flags: tuple[str, ...], capability: str, covered: bool) -> None:
    assert flags_cover(flags, capability) is covered


def test_arch_flags_read_as_capabilities() -> None:
    assert arch_capability("sm_120") == ("12.0", False)
    assert arch_capability("compute_75") == ("7.5", True)
    assert arch_capability("sm_x") is None


def test_the_best_environment_fits_then_has_torchvision_then_is_on_path_then_is_newest(
    table: CompatTable,
) -> None:
    facts = with_envs(
        facts_of(H200_VM),
        env("2.14.1+cu130", "13.0", path="/a"),  # newest, but no torchvision
        env("2.11.0+cu130", "13.0", path="/b", torchvision="0.26.0"),
        env("2.12.0+cu130", "13.0", path="/c", torchvision="0.27.0"),
        env("2.11.0+cu130", "13.0", path="/d", torchvision="0.26.0", on_path=True),
        env("2.14.1+cpu", None, path="/e", torchvision="0.29.1", on_path=True),
    )
    assert [f.env.path for f in ranked(facts, table)] == ["/d", "/c", "/b", "/a", "/e"]
    best = best_torch_env(facts, table)
    assert best is not None and best.env.path == "/d" and best.fits


def test_no_environment_is_no_best(table: CompatTable) -> None:
    assert best_torch_env(facts_of("h100x8-ubuntu2204-fresh"), table) is None


def test_the_build_this_driver_runs_is_named_for_the_fix(table: CompatTable) -> None:
    facts = facts_of(RTX4090)
    assert fitting_variant(facts.python.torch_envs[0], facts, table) == "cu128"
    assert fitting_variant(env("2.99.0", "13.0"), facts, table) is None
