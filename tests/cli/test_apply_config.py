"""`gpuwizard apply --config answers.yaml`: replay on the same kind of server, refuse another,
and every bad file as one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwizard.export.answers import render_answers
from gpuwizard.recommend.planner import Options
from tests.cli.helpers import gpuwizard
from tests.export.conftest import source_for


@pytest.fixture
def answers(tmp_path: Path) -> Path:
    """Answers made on an 8x H100 Ubuntu 22.04 server, with a conda environment and DCGM."""
    path = tmp_path / "answers.yaml"
    options = Options(env_kind="conda", env_name="train", dcgm=True)
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
        "gpuwizard: the answers do not fit this server: they were made for Hopper GPUs (sm 9.0); "
        "this server has Ampere (sm 8.0); they were made on ubuntu 22.04; this server runs the older 20.04; "
        "nothing to install: nothing fits torch 2.14.1 with cu130"
    )


def test_an_older_os_is_refused_unless_the_changes_are_accepted(tmp_path: Path) -> None:
    answers = tmp_path / "made-on-24.04.yaml"  # as if made on an H100 server with Ubuntu 24.04
    made = render_answers(source_for("h100x8-ubuntu2204-fresh"))
    answers.write_text(made.replace('os_version: "22.04"', 'os_version: "24.04"'))
    args = ("--simulate", "h100x8-ubuntu2204-fresh", "apply", "--config", str(answers), "--dry-run")
    refused = gpuwizard(tmp_path, *args)
    assert refused.returncode == 3
    assert "they were made on ubuntu 24.04; this server runs the older 22.04" in refused.stderr
    assert "pass --accept-changes to plan it anyway" in refused.stderr
    accepted = gpuwizard(tmp_path, *args, "--accept-changes")
    assert accepted.returncode == 0, accepted.stderr
    assert "(dry run: nothing was changed)" in accepted.stdout


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
