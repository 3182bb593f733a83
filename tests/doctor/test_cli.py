"""`gpuwizard doctor` on the built-in simulated hosts: exit codes, text, JSON, --log, --bundle."""

from __future__ import annotations

import json
import stat
import tarfile
from pathlib import Path

import pytest

from gpuwizard.frontends.cli import main
from tests.conftest import PROFILE_NAMES

SAMPLES = Path(__file__).parent / "samples"
SICK = "a100x8-ubuntu2204-neglected"
EXIT = {  # 0 healthy (warnings allowed), 1 a problem, 2 nothing could be checked
    "a100x4-ubuntu2004-fresh": 0,
    "a100x8-ubuntu2204-neglected": 1,
    "a10g-ubuntu2204-dlami-conda": 0,
    "h100pcie-ubuntu2204-lambda-stack": 0,
    "h100x8-ubuntu2204-fresh": 0,
    "h200-ubuntu2404-driver570": 0,
    "h200-vm-ubuntu2404-preinstalled": 0,
    "l40sx4-rocky9-fresh": 0,
    "nogpu-ubuntu2204": 2,
    "rtx4090-ubuntu2204-driver570-torch-cu130": 1,
    "rtx5090-ubuntu2404-secureboot": 0,
    "t4-debian12-fresh": 0,
    "t4-debian12-secureboot": 0,
    "v100x4-ubuntu2204-driver535": 0,
    "wsl2-ubuntu2204-rtx4090": 0,
}


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["doctor", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_every_profile_has_an_expected_exit_code() -> None:
    assert set(EXIT) == set(PROFILE_NAMES)


@pytest.mark.parametrize("profile", sorted(EXIT))
def test_the_exit_code_says_healthy_problems_or_unchecked(
    profile: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = doctor(capsys, "--simulate", profile)
    assert code == EXIT[profile], out
    assert out.startswith("gpuwizard doctor: ")


def test_json_lists_every_finding_for_scripts(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = doctor(capsys, "--simulate", SICK, "--json")
    data = json.loads(out)
    assert (code, data["status"], data["exit_code"], data["schema"]) == (1, "problems", 1, 1)
    problems = {f["check"] for f in data["findings"] if f["severity"] == "problem"}
    assert problems == {"driver", "next-boot", "cuda-versions", "pcie", "xid", "ecc", "multi-node"}
    assert {"check", "severity", "title", "explanation", "fix", "evidence", "source"} <= set(
        data["findings"][0]
    )
    assert data["host"]["driver"] == "535.216.01"


def test_a_training_log_is_diagnosed_with_this_machines_numbers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = doctor(capsys, "--simulate", "h100x8-ubuntu2204-fresh",
                          "--log", str(SAMPLES / "nccl-timeout.txt"), "--log", str(SAMPLES / "cuda-oom.txt"))  # fmt: skip
    assert code == 1
    assert (
        "NCCL failed (log nccl-timeout.txt)" in out
        and "Out of GPU memory (log cuda-oom.txt)" in out
    )
    assert "NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2" in out.replace("\n             ", "")


def test_a_missing_log_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = doctor(capsys, "--simulate", SICK, "--log", "/no/such/train.log")
    assert (code, out) == (2, "")
    assert err == "gpuwizard: --log /no/such/train.log: no such file\n"


def test_an_env_that_is_not_there_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = doctor(capsys, "--simulate", SICK, "--env", "/no/such/env")
    assert (code, out) == (2, "")
    assert err == "gpuwizard: --env /no/such/env: no such folder (give a venv or conda env)\n"


def test_the_bundle_is_written_private_and_never_over_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = doctor(capsys, "--simulate", SICK, "--bundle", "support.tar.gz")
    assert code == 1 and "Support bundle: support.tar.gz" in out
    bundle = tmp_path / "support.tar.gz"
    assert stat.S_IMODE(bundle.stat().st_mode) == 0o600
    with tarfile.open(bundle) as archive:
        names = set(archive.getnames())
    assert {"gpuwizard-bundle/doctor.json", "gpuwizard-bundle/facts.json", "gpuwizard-bundle/kernel.log",
            "gpuwizard-bundle/manifest.json", "gpuwizard-bundle/README.txt"} <= names  # fmt: skip
    code, _, err = doctor(capsys, "--simulate", SICK, "--bundle", "support.tar.gz")
    assert code == 2 and err == "gpuwizard: --bundle support.tar.gz: File exists\n"


def test_a_bundle_into_a_folder_gets_a_dated_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "out").mkdir()
    code, out, err = doctor(
        capsys, "--simulate", "h200-ubuntu2404-driver570", "--json", "--bundle", "out"
    )
    assert code == 0
    path = json.loads(out)["bundle"]
    assert path.startswith("out/gpuwizard-bundle-") and path.endswith(".tar.gz")
    assert "Support bundle:" in err  # stdout stays pure JSON
