"""Which Python ``bench`` runs without --python, on the real machine and the simulated one:
gpuwizard's environment, else the best PyTorch already there (its own interpreter on a real
machine; the simulation's stand-in for that environment), else a one-line refusal."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from gpuwizard.core.facts import NvmlUnavailable
from gpuwizard.frontends.benchcmd import BenchUsageError, python_argv
from gpuwizard.machine import Machine
from gpuwizard.machine.detect.recording import RecordedCommands
from gpuwizard.machine.host import Host
from tests.conftest import facts_of

H200_VM = "h200-vm-ubuntu2404-preinstalled"


def machine(root: Path, simulated: bool) -> Machine:
    host = Host(root=root, run=RecordedCommands({}), nvml=lambda: NvmlUnavailable("none"))
    return Machine(
        name="simulated x" if simulated else "this machine",
        host=lambda: host,
        state_dir=root / "state",
        simulated=simulated,
        python_in=(lambda env: (sys.executable, "-m", "stand-in", "--env", env)) if simulated
        else (lambda env: (f"{env}/bin/python",)),
    )  # fmt: skip


NO_PYTHON = argparse.Namespace(python=None)


@pytest.mark.parametrize("simulated", [False, True], ids=["real", "simulated"])
def test_gpuwizards_own_environment_comes_first(tmp_path: Path, simulated: bool) -> None:
    (tmp_path / "opt/gpuwizard/envs/pytorch/bin").mkdir(parents=True)
    (tmp_path / "opt/gpuwizard/envs/pytorch/bin/python").write_text("")
    argv, said = python_argv(NO_PYTHON, machine(tmp_path, simulated), facts_of(H200_VM))
    expected = (
        (sys.executable, "-m", "stand-in", "--env", "/opt/gpuwizard/envs/pytorch")
        if simulated
        else ("/opt/gpuwizard/envs/pytorch/bin/python",)
    )
    assert argv == expected
    assert said == "/opt/gpuwizard/envs/pytorch/bin/python (gpuwizard's environment)"


def test_on_a_real_machine_the_existing_environments_own_interpreter_runs(tmp_path: Path) -> None:
    argv, said = python_argv(NO_PYTHON, machine(tmp_path, False), facts_of(H200_VM))
    assert argv == ("/opt/torch/.venv/bin/python3", "-I")  # isolated: never the caller's folder
    assert said.startswith(
        "/opt/torch/.venv/bin/python3 (torch 2.11.0+cu130 (CUDA 13.0) in /opt/torch/.venv"
    )
    assert "found as first python3 on PATH" in said


def test_in_the_simulation_the_stand_in_runs_for_that_environment(tmp_path: Path) -> None:
    argv, _ = python_argv(NO_PYTHON, machine(tmp_path, True), facts_of(H200_VM))
    assert argv[-2:] == ("--env", "/opt/torch/.venv")


def test_an_environment_that_does_not_fit_is_used_and_said_so(tmp_path: Path) -> None:
    _, said = python_argv(
        NO_PYTHON, machine(tmp_path, False), facts_of("rtx4090-ubuntu2204-driver570-torch-cu130")
    )
    assert "does not fit: cu130 (CUDA 13.0) needs driver 580 or newer" in said


def test_no_torch_anywhere_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(BenchUsageError, match="no PyTorch found on this machine"):
        python_argv(NO_PYTHON, machine(tmp_path, False), facts_of("h100x8-ubuntu2204-fresh"))


def test_a_python_given_on_a_real_machine_runs_isolated(tmp_path: Path) -> None:
    python = tmp_path / "venv/bin/python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    given = argparse.Namespace(python=str(python))
    argv, said = python_argv(given, machine(tmp_path, False), facts_of(H200_VM))
    assert argv == (str(python), "-I") and said == str(python)


def test_a_python_given_in_the_simulation_runs_the_stand_in_for_its_environment(
    tmp_path: Path,
) -> None:
    given = argparse.Namespace(python="/opt/torch/.venv/bin/python3")
    argv, said = python_argv(given, machine(tmp_path, True), facts_of(H200_VM))
    assert argv[-2:] == ("--env", "/opt/torch/.venv") and said == given.python


@pytest.mark.parametrize("damage", ["unreadable", "torn"])
def test_a_record_that_cannot_be_read_is_said_beside_the_environment_used(
    tmp_path: Path, damage: str
) -> None:
    """bench as another user than the setup's (its 0700 state), or after a torn journal: the
    default environment is a guess, and the words say why."""
    (tmp_path / "opt/gpuwizard/envs/pytorch/bin").mkdir(parents=True)
    (tmp_path / "opt/gpuwizard/envs/pytorch/bin/python").write_text("")
    state = tmp_path / "state"
    state.mkdir()
    (state / "journal.json").write_text("{torn")
    if damage == "unreadable":
        import unittest.mock

        denied = PermissionError(13, "Permission denied")
        with unittest.mock.patch("gpuwizard.frontends.benchcmd.current", side_effect=denied):
            _, said = python_argv(NO_PYTHON, machine(tmp_path, False), facts_of(H200_VM))
        assert said.endswith(f"; gpuwizard's record in {state} cannot be read (Permission denied))")
    else:
        _, said = python_argv(NO_PYTHON, machine(tmp_path, False), facts_of(H200_VM))
        assert f"gpuwizard's record in {state} cannot be read (" in said
    assert said.startswith("/opt/gpuwizard/envs/pytorch/bin/python (gpuwizard's environment")
