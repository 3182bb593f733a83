"""This real machine with a PyTorch already installed: a venv first on PATH, as a person's shell
has it. detect lists it, capture-host records it with the PATH, the doctor asks its Python for
its arch list, bench would run in it. Needs a Python with torch (GPUWIZARD_TORCH_PYTHON)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.realhost.conftest import gpuwizard

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def torch_venv() -> Path:
    """The venv of GPUWIZARD_TORCH_PYTHON (its prefix has the pyvenv.cfg)."""
    python = os.environ.get("GPUWIZARD_TORCH_PYTHON")
    if not python:
        pytest.skip("set GPUWIZARD_TORCH_PYTHON to a venv's Python with torch")
    prefix = Path(python).parent.parent
    if not (prefix / "pyvenv.cfg").is_file():
        pytest.skip(f"{python} is not a venv's")
    return prefix


def on_path(venv: Path) -> dict[str, str]:
    return {"PATH": f"{venv}/bin:{os.environ['PATH']}"}


def test_detect_lists_the_venv_first_on_path(tmp_path: Path, torch_venv: Path) -> None:
    done = gpuwizard(tmp_path, "detect", "--json", env=on_path(torch_venv))
    envs = json.loads(done.stdout)["facts"]["python"]["torch_envs"]
    mine = [e for e in envs if e["path"] == str(torch_venv)]
    assert done.returncode == 0 and len(mine) == 1
    assert mine[0]["on_path"] and mine[0]["found_by"][0] == "first python3 on PATH"
    assert mine[0]["torch"].startswith("2.") and mine[0]["build_known"]
    text = gpuwizard(tmp_path, "detect", env=on_path(torch_venv)).stdout
    assert f"in {torch_venv}, Python" in text and "· first on PATH" in text


def test_capture_host_records_the_path_and_the_venvs_files(
    tmp_path: Path, torch_venv: Path
) -> None:
    folder = tmp_path / "capture"
    done = gpuwizard(tmp_path, "capture-host", str(folder), env=on_path(torch_venv))
    assert done.returncode == 0, done.stderr
    environ = json.loads((folder / "environ.json").read_text())
    assert environ["PATH"].startswith(f"{torch_venv}/bin:")
    assert (folder / "root" / str(torch_venv).lstrip("/") / "pyvenv.cfg").is_file()
    assert list(
        (folder / "root" / str(torch_venv).lstrip("/")).glob(
            "lib/python3*/site-packages/torch/version.py"
        )
    )


@pytest.mark.slow
def test_the_doctor_asks_the_venvs_python_for_its_arch_list(
    tmp_path: Path, torch_venv: Path
) -> None:
    done = gpuwizard(tmp_path, "doctor", "--json", env=on_path(torch_venv), timeout_s=200)
    findings = json.loads(done.stdout)["findings"]
    if not any(f["check"] == "torch-env" for f in findings):
        pytest.skip("no NVIDIA GPU here: the doctor judges environments only against GPUs")
    mine = next(f for f in findings if f["check"] == "torch-env" and str(torch_venv) in f["title"])
    assert any(
        e.startswith("arch list from ") and "-I (its own torch)" in e for e in mine["evidence"]
    )
