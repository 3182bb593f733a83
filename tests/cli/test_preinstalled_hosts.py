"""Machines as users meet them (issue 26): a cloud H200 microVM with PyTorch already there, a
Deep Learning image, a Lambda Stack host, and a torch its driver cannot run, through ``detect``,
``doctor`` and ``bench`` as a person runs them.

The text of ``detect`` and ``doctor`` on each is a golden file (tests/golden/outputs/); review a
change, then regenerate on purpose with ``GPUWIZARD_UPDATE_GOLDEN=1 pytest tests/cli/test_preinstalled_hosts.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from gpuwizard.frontends.cli import main
from tests.cli.helpers import gpuwizard
from tests.conftest import TESTS

GOLDEN = TESTS / "golden" / "outputs"
H200_VM = "h200-vm-ubuntu2404-preinstalled"
PREINSTALLED = (
    H200_VM,
    "a10g-ubuntu2204-dlami-conda",
    "h100pcie-ubuntu2204-lambda-stack",
    "rtx4090-ubuntu2204-driver570-torch-cu130",
)


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def said(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def golden(name: str, text: str) -> str:
    path = GOLDEN / name
    if os.environ.get("GPUWIZARD_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("profile", PREINSTALLED)
@pytest.mark.parametrize("command", ["detect", "doctor"])
def test_output_matches_its_golden_file(
    capsys: pytest.CaptureFixture[str], profile: str, command: str
) -> None:
    _, out = said(capsys, "--simulate", profile, command)
    assert out == golden(f"{profile}/{command}.txt", out)


def test_detect_on_the_h200_microvm_says_what_is_true(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = said(capsys, "--simulate", H200_VM, "detect")
    assert code == 0
    assert "Disks    vda 275 GB virtual disk, vdb 332 MB virtual disk" in out
    assert "Network  eth0 speed unknown" in out
    assert (
        "PyTorch  torch 2.11.0+cu130 (CUDA 13.0) in /opt/torch/.venv, Python 3.12 · first on PATH"
        in out
    )
    assert (
        "Runs in  docker container · on a VM (its hypervisor does not say which) · no systemd"
        in out
    )
    assert "HDD" not in out and "spinning" not in out and "? Gb/s" not in out


def test_detect_json_carries_the_environment_for_a_choice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = said(capsys, "--simulate", H200_VM, "detect", "--json")
    (env,) = json.loads(out)["facts"]["python"]["torch_envs"]
    assert code == 0 and (env["path"], env["torch"], env["torch_cuda"], env["on_path"]) == (
        "/opt/torch/.venv", "2.11.0+cu130", "13.0", True,
    )  # fmt: skip


def test_doctor_on_the_h200_microvm_reports_the_gpus_health_with_numbers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = said(capsys, "--simulate", H200_VM, "doctor", "--json")
    findings = {f["check"]: f for f in json.loads(out)["findings"]}
    assert code == 0
    expected = {
        "ecc": "ECC on (1 of 1 GPU): 0 uncorrectable volatile, 0 aggregate; 0 rows remapped, none pending",
        "pcie": "PCIe links at Gen5 x16 of Gen5 x16 (1 GPU)",
        "persistence": "Persistence mode on (1 of 1 GPU)",
        "clocks": "Clocks not held down: no power cap, thermal or hardware slowdown (1 GPU, 1 idle)",
        "torch-env": "torch 2.11.0+cu130 in /opt/torch/.venv: CUDA 13.0 on driver 580.159.04 (CUDA 13.0), sm_90 covered",
        "cuda-versions": "CUDA: driver 13.0, toolkit none, torch 13.0",
    }
    for check, title in expected.items():
        assert (findings[check]["severity"], findings[check]["title"]) == ("ok", title)
    assert findings["xid"]["title"] == "Xid errors not checked: kernel log not readable"


def test_doctor_names_the_mismatch_and_its_fix(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = said(capsys, "--simulate", "rtx4090-ubuntu2204-driver570-torch-cu130", "doctor")
    assert code == 1
    assert "PROBLEM    torch 2.11.0 in /home/alice/miniconda3/envs/train does not run here" in out
    assert "cu130 (CUDA 13.0) needs driver 580 or newer; this machine has 570.133.20" in out
    assert "--index-url https://download.pytorch.org/whl/cu128" in " ".join(out.split())


@pytest.mark.parametrize(
    ("profile", "line"),
    [
        ("a10g-ubuntu2204-dlami-conda", "PyTorch  torch 2.3.1+cu121 (CUDA 12.1) in /opt/conda/envs/pytorch, Python 3.11"),
        ("h100pcie-ubuntu2204-lambda-stack",
         "PyTorch  torch 2.4.1 (CUDA 12.4) in /usr/lib/python3/dist-packages, Python 3.10 · first on PATH"),
    ],
)  # fmt: skip
def test_the_vendor_images_show_their_own_environments(
    capsys: pytest.CaptureFixture[str], profile: str, line: str
) -> None:
    code, out = said(capsys, "--simulate", profile, "detect")
    assert code == 0 and line in out.splitlines()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("profile", "python"),
    [
        (H200_VM, "with /opt/torch/.venv/bin/python3 (torch 2.11.0+cu130 (CUDA 13.0) in /opt/torch/.venv"),
        ("h100pcie-ubuntu2204-lambda-stack", "with /usr/bin/python3.10 (torch 2.4.1 (CUDA 12.4) in /usr/lib/python3/dist-packages"),
    ],
)  # fmt: skip
def test_bench_without_python_runs_in_the_environment_that_is_there(
    tmp_path: Path, profile: str, python: str
) -> None:
    done = gpuwizard(
        tmp_path, "--simulate", profile, "bench", "--modes", "amp-bf16", "--no-dataload", "--json"
    )
    assert done.returncode == 0, done.stderr
    assert python in done.stderr
    assert "gpuwizard's environment /opt/gpuwizard/envs/pytorch does not exist" in done.stderr
    assert json.loads(done.stdout)["results"][0]["mode"] == "amp-bf16"


@pytest.mark.slow
def test_bench_with_no_torch_anywhere_says_how_to_give_one(tmp_path: Path) -> None:
    done = gpuwizard(tmp_path, "--simulate", "h100x8-ubuntu2204-fresh", "bench")
    assert done.returncode == 2
    assert (
        "no environment at /opt/gpuwizard/envs/pytorch and no PyTorch found on this machine"
        in done.stderr
    )
    assert "pass --python PATH" in done.stderr


USABLE = {
    H200_VM: "/opt/torch/.venv",
    "a10g-ubuntu2204-dlami-conda": "/opt/conda/envs/pytorch",
    "h100pcie-ubuntu2204-lambda-stack": "/usr/lib/python3/dist-packages",
}


@pytest.mark.parametrize(("profile", "path"), USABLE.items())
def test_recommend_offers_the_environment_that_is_here(
    capsys: pytest.CaptureFixture[str], profile: str, path: str
) -> None:
    code, out = said(capsys, "--simulate", profile, "recommend")
    assert code == 0 and "PyTorch already here:" in out
    assert f"to use it as it is: --use-env {path} (nothing downloaded; the recommended" in out
    assert "GiB)" in out


@pytest.mark.slow
@pytest.mark.parametrize(("profile", "path"), USABLE.items())
def test_apply_with_use_env_installs_nothing_and_verifies_that_environment(
    tmp_path: Path, profile: str, path: str
) -> None:
    """Issue 26 (1): the environment that is here, used as it is: no environment is made, no
    PyTorch downloaded, the driver kept; its own Python verifies it, and bench runs there."""
    plan = gpuwizard(tmp_path, "--simulate", profile, "apply", "--dry-run", "--use-env", path)
    assert plan.returncode == 0, plan.stderr
    assert "already here: used as it is" in plan.stdout and "driver: keep" in plan.stdout
    for step in ("create-env", "install-torch", "Create the", "Install PyTorch"):
        assert step not in plan.stdout, plan.stdout
    done = gpuwizard(tmp_path, "--simulate", profile, "apply", "--yes", "--use-env", path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "==> verified: torch" in done.stdout and f"in {path} works on every GPU" in done.stdout
    bench = gpuwizard(
        tmp_path, "--simulate", profile, "bench", "--modes", "amp-bf16", "--no-dataload", "--json"
    )
    assert bench.returncode == 0 and f"(the environment {path})" in bench.stderr, bench.stderr


@pytest.mark.parametrize(
    ("profile", "path", "why"),
    [
        ("rtx4090-ubuntu2204-driver570-torch-cu130", "/home/alice/miniconda3/envs/train", "cu130 (CUDA 13.0) needs driver 580 or newer"),
        (H200_VM, "/opt/nothing", "no PyTorch environment there (found: /opt/torch/.venv)"),
        (H200_VM, "/opt/torch/.venv --torch 2.5.1", "uses the PyTorch that is there as it is: drop --torch"),
    ],
)  # fmt: skip
def test_an_environment_that_cannot_be_used_is_refused_in_one_line(
    tmp_path: Path, profile: str, path: str, why: str
) -> None:
    for command in ("recommend", "apply"):
        done = gpuwizard(
            tmp_path,
            "--simulate",
            profile,
            command,
            "--dry-run" if command == "apply" else "--json",
            "--use-env",
            *path.split(),
        )
        assert done.returncode == 2, done.stdout + done.stderr
        assert why in done.stderr and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.slow
def test_the_export_of_a_setup_that_used_the_environment_here(tmp_path: Path) -> None:
    """answers.yaml replays the choice (no release pinned: the environment decides); deploy.sh
    verifies that environment; a Dockerfile cannot (an image has no such environment) and is
    left out with a note, or refused by name when asked for alone."""
    here = "/opt/torch/.venv"
    assert (
        gpuwizard(tmp_path, "--simulate", H200_VM, "apply", "--yes", "--use-env", here).returncode
        == 0
    )
    done = gpuwizard(tmp_path, "--simulate", H200_VM, "export", "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert (
        "gpuwizard: Dockerfile: not made: the setup uses the PyTorch already in /opt/torch/.venv"
        in done.stderr
    )
    made = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert "Dockerfile" not in made and {"answers.yaml", "deploy.sh"} <= set(made)
    answers = (tmp_path / "out" / "answers.yaml").read_text()
    request = yaml.safe_load(answers)["request"]
    assert request["use_env"] == here and "torch" not in request and "variant" not in request
    assert f"{here}/bin/python3 -I -c" in (tmp_path / "out" / "deploy.sh").read_text()
    alone = gpuwizard(tmp_path, "--simulate", H200_VM, "export", "--format", "dockerfile")
    assert alone.returncode == 2 and alone.stderr.count("\n") == 1, alone.stderr
