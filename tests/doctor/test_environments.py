"""The doctor on the PyTorch environments a person already has: each one's CUDA build against
the driver, and its architectures against the GPUs, asked of its own Python where it may be run.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from gpuwizard.core.facts import HostFacts, NvmlUnavailable
from gpuwizard.core.torch_envs import TorchEnv
from gpuwizard.doctor.checks import run_checks
from gpuwizard.doctor.environments import check_torch_envs
from gpuwizard.doctor.observed import ARCH_PROBE, ArchList, parse_arch_probe
from gpuwizard.doctor.readings import probe_argv, read_arch_lists, read_observed
from gpuwizard.machine.detect import local_host
from gpuwizard.machine.detect.recording import RecordedCommands, command_key
from gpuwizard.machine.host import Host, Output
from gpuwizard.recommend.table import CompatTable
from tests.conftest import facts_of
from tests.doctor.conftest import NO_STATE, observed_of

H200_VM = "h200-vm-ubuntu2404-preinstalled"
RTX4090 = "rtx4090-ubuntu2204-driver570-torch-cu130"


def only(facts: HostFacts, profile: str, table: CompatTable, **seen: object):  # type: ignore[no-untyped-def]
    (finding,) = check_torch_envs(facts, dataclasses.replace(observed_of(profile), **seen), table)
    return finding


def test_the_h200s_preinstalled_torch_fits_its_driver_with_the_numbers(table: CompatTable) -> None:
    finding = only(facts_of(H200_VM), H200_VM, table)
    assert finding.severity == "ok"
    assert finding.title == (
        "torch 2.11.0+cu130 in /opt/torch/.venv: CUDA 13.0 on driver 580.159.04 (CUDA 13.0), sm_90 covered"
    )
    assert (
        "found as: first python3 on PATH, venv in /opt; python /opt/torch/.venv/bin/python3"
        in finding.evidence
    )


def test_a_build_the_driver_cannot_run_is_named_with_both_fixes(table: CompatTable) -> None:
    finding = only(facts_of(RTX4090), RTX4090, table)
    assert finding.severity == "problem"
    assert finding.title == "torch 2.11.0 in /home/alice/miniconda3/envs/train does not run here"
    assert finding.explanation == (
        "cu130 (CUDA 13.0) needs driver 580 or newer; this machine has 570.133.20 (CUDA 12.8)."
    )
    assert finding.fix == (
        "Upgrade the driver to 580 or newer (gpuwizard recommend plans it), or install the cu128 "
        "build into it: /home/alice/miniconda3/envs/train/bin/python3 -m pip install torch==2.11.0 "
        "--index-url https://download.pytorch.org/whl/cu128."
    )


def test_the_arch_list_its_python_gave_is_used_and_shown(table: CompatTable) -> None:
    asked = ArchList("/opt/torch/.venv/bin/python3", ("sm_80",))
    finding = only(facts_of(H200_VM), H200_VM, table, arch_lists=(asked,))
    assert (
        finding.severity == "problem"
        and "no kernels for H200 SXM 141GB (sm_90)" in finding.explanation
    )
    assert (
        "arch list from /opt/torch/.venv/bin/python3 -I (its own torch): sm_80" in finding.evidence
    )


def test_a_cpu_build_is_a_problem_with_its_fix(table: CompatTable) -> None:
    facts = facts_of(H200_VM)
    cpu = dataclasses.replace(facts.python.torch_envs[0], torch="2.14.1+cpu", torch_cuda=None)
    facts = dataclasses.replace(facts, python=dataclasses.replace(facts.python, torch_envs=(cpu,)))
    finding = only(facts, H200_VM, table)
    assert finding.severity == "problem" and "CPU-only" in finding.explanation
    assert "--index-url https://download.pytorch.org/whl/<cuXYZ>" in finding.fix


def test_no_driver_means_not_known(table: CompatTable) -> None:
    facts = facts_of(H200_VM)
    facts = dataclasses.replace(
        facts,
        boot=dataclasses.replace(facts.boot, nvml=NvmlUnavailable("no NVIDIA driver is installed")),
    )
    assert only(facts, H200_VM, table).severity == "unknown"


def test_every_environment_gets_a_finding_and_machines_without_one_none(table: CompatTable) -> None:
    for profile in ("h100x8-ubuntu2204-fresh", "nogpu-ubuntu2204"):
        assert check_torch_envs(facts_of(profile), observed_of(profile), table) == ()
    checks = [f.check for f in run_checks(facts_of(RTX4090), observed_of(RTX4090), table)]
    assert checks.count("torch-env") == 1


def test_cuda_versions_reads_the_persons_torch_when_gpuwizard_built_none(
    table: CompatTable,
) -> None:
    """Issue 26: "CUDA: driver 13.0, toolkit 13.0, torch none" though python3 had torch."""
    seen = observed_of(H200_VM)
    assert seen.torch is not None and (seen.torch.version, seen.torch.cuda) == (
        "2.11.0+cu130",
        "13.0",
    )
    assert seen.env == "/opt/torch/.venv"
    cuda = next(f for f in run_checks(facts_of(H200_VM), seen, table) if f.check == "cuda-versions")
    assert cuda.title == "CUDA: driver 13.0, toolkit none, torch 13.0"


# ------------------------------------------------------------------------- asking its Python
PROBE_OUT = json.dumps(
    {"torch": "2.11.0+cu130", "arch": ["sm_75", "sm_80", "sm_90", "compute_120"]}
)


@pytest.mark.parametrize(
    ("text", "flags"),
    [
        (PROBE_OUT + "\n", ("sm_75", "sm_80", "sm_90", "compute_120")),
        ("UserWarning: something\n" + json.dumps({"arch": []}), ()),
        (
            "Traceback (most recent call last):\nModuleNotFoundError: No module named 'torch'\n",
            None,
        ),
        (json.dumps({"arch": ["sm_90", "; rm -rf /", 7]}), ("sm_90",)),
        (json.dumps({"arch": ["sm_90"] * 100}), None),
        ("", None),
    ],
)
def test_the_probes_answer_is_parsed_strictly(text: str, flags: tuple[str, ...] | None) -> None:
    assert parse_arch_probe(text) == flags


def probed_host(root: Path, env: TorchEnv, out: Output) -> Host:
    return Host(root=root, run=RecordedCommands({command_key(probe_argv(env)): out}),
                nvml=lambda: NvmlUnavailable("none"))  # fmt: skip


def h200_env_in(root: Path) -> tuple[HostFacts, TorchEnv]:
    """The H200's facts, with its environment's files present under ``root`` (ours to run)."""
    facts = facts_of(H200_VM)
    env = facts.python.torch_envs[0]
    for part in (env.python, f"{env.site}/torch/version.py"):
        target = root / part.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("")
    return facts, env


def test_the_doctor_asks_the_environments_own_python_isolated(tmp_path: Path) -> None:
    facts, env = h200_env_in(tmp_path)
    assert probe_argv(env) == [env.python, "-I", "-c", ARCH_PROBE]
    (asked,) = read_arch_lists(probed_host(tmp_path, env, Output(0, PROBE_OUT)), facts)
    assert asked == ArchList(env.python, ("sm_75", "sm_80", "sm_90", "compute_120"))


@pytest.mark.parametrize(
    ("out", "why"),
    [
        (Output(127, ""), "not run: its Python could not be started"),
        (Output(124, "", "timed out"), "not answered within 120 s"),
        (
            Output(1, "", "ModuleNotFoundError: No module named 'torch'"),
            "its Python said nothing usable: ModuleNotFoundError",
        ),
    ],
)
def test_a_python_that_does_not_answer_says_why(tmp_path: Path, out: Output, why: str) -> None:
    facts, env = h200_env_in(tmp_path)
    (asked,) = read_arch_lists(probed_host(tmp_path, env, out), facts)
    assert asked.flags is None and asked.why is not None and asked.why.startswith(why)


def test_an_environment_others_can_change_is_never_run(tmp_path: Path) -> None:
    """Run as root, a user's torch would run that user's code as root: a torch folder anyone
    may write is not run, and the finding falls back to the table."""
    facts, env = h200_env_in(tmp_path)
    (tmp_path / env.site.lstrip("/") / "torch").chmod(0o777)
    (asked,) = read_arch_lists(probed_host(tmp_path, env, Output(0, PROBE_OUT)), facts)
    assert asked.flags is None and asked.why == f"not run: {env.site}/torch is not root's or yours"


@pytest.mark.slow
def test_a_real_torch_on_this_machine_gives_its_arch_list_without_a_gpu() -> None:
    """The probe with this machine's own torch (GPUWIZARD_TORCH_PYTHON): no GPU is needed."""
    python = os.environ.get("GPUWIZARD_TORCH_PYTHON")
    if not python:
        pytest.skip("set GPUWIZARD_TORCH_PYTHON to a Python with torch")
    site = next(Path(python).parent.parent.glob("lib/python3*/site-packages"))
    facts = facts_of(H200_VM)
    env = dataclasses.replace(facts.python.torch_envs[0], python=python, site=str(site))
    facts = dataclasses.replace(facts, python=dataclasses.replace(facts.python, torch_envs=(env,)))
    (asked,) = read_arch_lists(local_host(), facts)
    assert asked.why is None and asked.flags is not None
    assert all(f.startswith(("sm_", "compute_")) for f in asked.flags)


def test_read_observed_carries_the_arch_lists(tmp_path: Path) -> None:
    facts, env = h200_env_in(tmp_path)
    seen = read_observed(probed_host(tmp_path, env, Output(0, PROBE_OUT)), facts, NO_STATE)
    assert seen.arch_list(env.python) is not None
