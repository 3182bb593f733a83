"""`gpuwizard apply --config answers.yaml`: replay on the same kind of server, refuse another,
and every bad file as one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwizard.core.request import SetupRequest
from gpuwizard.export.answers import render_answers
from tests.cli.helpers import gpuwizard
from tests.export.conftest import source_for


@pytest.fixture
def answers(tmp_path: Path) -> Path:
    """Answers made on an 8x H100 Ubuntu 22.04 server, with a conda environment and DCGM."""
    path = tmp_path / "answers.yaml"
    options = SetupRequest(env_kind="conda", env_name="train", dcgm=True)
    path.write_text(render_answers(source_for("h100x8-ubuntu2204-fresh", options)))
    return path


def test_the_same_kind_of_server_gets_the_same_plan(tmp_path: Path, answers: Path) -> None:
    done = gpuwizard(tmp_path, "--simulate", "h100x8-ubuntu2204-fresh", "apply", "--config", str(answers), "--dry-run")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "environment: conda /opt/gpuwizard/miniforge/envs/train" in done.stdout
    assert "DCGM" in done.stdout or "dcgm" in done.stdout


def test_another_architecture_is_refused_with_every_reason(tmp_path: Path, answers: Path) -> None:
    done = gpuwizard(tmp_path, "--simulate", "a100x4-ubuntu2004-fresh", "apply", "--config", str(answers), "--dry-run")  # fmt: skip
    assert done.returncode == 3
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(
        "gpuwizard: the answers do not fit this server: GPUs: made for 8x 10de:2330, this host has "
        "4x 10de:20b0; OS: made for ubuntu 22.04, this host has ubuntu 20.04; "
        "nothing to install: nothing fits torch 2.14.1 with cu130"
    )


def test_another_host_is_refused_by_name_unless_forced_as_deploy_sh_is(tmp_path: Path) -> None:
    answers = tmp_path / "made-elsewhere.yaml"  # an H100 server on Ubuntu 24.04, driver 570 loaded
    made = render_answers(source_for("h100x8-ubuntu2204-fresh"))
    answers.write_text(
        made.replace('os_version: "22.04"', 'os_version: "24.04"').replace(
            'driver: "none"', 'driver: "570"'
        )
    )
    args = ("--simulate", "h100x8-ubuntu2204-fresh", "apply", "--config", str(answers), "--dry-run")
    refused = gpuwizard(tmp_path, *args)
    accepted = gpuwizard(tmp_path, *args, "--accept-changes")
    forced = gpuwizard(tmp_path, *args, "--force")
    by_env = gpuwizard(tmp_path, *args, env={"GPUWIZARD_FORCE": "1"})

    assert refused.returncode == 3 and refused.stderr.count("\n") == 1
    assert refused.stderr == (
        "gpuwizard: this server is not the kind the answers were made for: OS: made for ubuntu "
        "24.04, this host has ubuntu 22.04; loaded NVIDIA driver branch: made for 570, this host "
        "has none. Nothing was changed; pass --force (GPUWIZARD_FORCE=1) to replay them here anyway\n"
    )
    assert accepted.returncode == 3, "--accept-changes is for a different plan, not another host"
    assert forced.returncode == 0, forced.stderr
    assert "(dry run: nothing was changed)" in forced.stdout
    assert by_env.returncode == 0, by_env.stderr


def test_a_different_plan_still_needs_accept_changes(tmp_path: Path) -> None:
    answers = tmp_path / "answers.yaml"
    made = render_answers(source_for("h100x8-ubuntu2204-fresh"))
    answers.write_text(made.replace("plan:\n", 'plan:\n- "a step this host does not plan"\n', 1))
    args = ("--simulate", "h100x8-ubuntu2204-fresh", "apply", "--config", str(answers), "--dry-run")
    refused = gpuwizard(tmp_path, *args, "--force")
    assert refused.returncode == 3
    assert "here they resolve to a different plan" in refused.stderr
    assert "pass --accept-changes to plan it anyway" in refused.stderr
    assert gpuwizard(tmp_path, *args, "--accept-changes").returncode == 0


def test_force_goes_with_config(tmp_path: Path) -> None:
    done = gpuwizard(tmp_path, "--simulate", "h100x8-ubuntu2204-fresh", "apply", "--force", "--dry-run")  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == "gpuwizard: --force goes with --config answers.yaml\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("schema: 1\n", "gpuwizard: missing"),
        ("\udcff", "not UTF-8 text (byte 0xff at offset 0)"),
    ],
)
def test_a_bad_file_is_one_line(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "answers.yaml"
    if content is not None:
        path.write_bytes(content.encode("utf-8", "surrogateescape"))
    done = gpuwizard(tmp_path, "--simulate", "h100x8-ubuntu2204-fresh", "apply", "--config", str(path), "--dry-run")  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith(f"gpuwizard: --config {path}: ") and message in done.stderr
    assert done.stderr.count("\n") == 1


def test_config_gives_every_choice(tmp_path: Path, answers: Path) -> None:
    done = gpuwizard(tmp_path, "--simulate", "h100x8-ubuntu2204-fresh", "apply", "--config", str(answers), "--torch", "2.13.0")  # fmt: skip
    assert (done.returncode, done.stderr) == (
        2,
        "gpuwizard: --config gives every choice; drop the other choice and option flags\n",
    )
