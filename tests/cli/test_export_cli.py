"""`gpuwizard export`: every format from the command line, the plan it exports, and bad input as
one line with exit status 2."""

from __future__ import annotations

import re
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from gpuwizard.core.request import SetupRequest
from gpuwizard.export.answers import load_answers, render_answers
from tests.cli.helpers import gpuwizard
from tests.export.conftest import source_for

H100 = "h100x8-ubuntu2204-fresh"


def one_line_error(done: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert done.returncode == code, done.stdout + done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def test_every_format_is_written_with_its_mode_and_the_paths_are_listed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = gpuwizard(tmp_path, "--simulate", H100, "export", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "no setup was run here yet" in done.stderr, "a fresh plan says so"
    names = {"deploy.sh", "Dockerfile", "docker-host.md", "answers.yaml", "playbook.yml", "cloud-init.yaml.gz"}  # fmt: skip
    assert {p.name for p in out.iterdir()} == names
    for name in names:
        assert f"  {out / name}" in done.stdout.splitlines()
    assert stat.S_IMODE((out / "deploy.sh").stat().st_mode) == 0o755
    assert (out / "deploy.sh").read_text() == _rendered(H100, "deploy.sh")


def _rendered(profile: str, name: str) -> str:
    from gpuwizard.export.formats import FORMATS, render

    source = source_for(profile)
    return next(f.content for fmt in FORMATS for f in render(source, fmt) if f.name == name)


def test_one_format_without_a_folder_goes_to_stdout(tmp_path: Path) -> None:
    done = gpuwizard(tmp_path, "--simulate", H100, "export", "--format", "answers")
    assert done.returncode == 0, done.stderr
    answers = load_answers(done.stdout)
    assert answers.request == source_for(H100).replayed
    assert answers.plan == source_for(H100).plan.summary
    assert not any(tmp_path.glob("gpuwizard-export*")), "nothing written"


def test_two_formats_without_a_folder_go_to_the_default_folder(tmp_path: Path) -> None:
    done = gpuwizard(tmp_path, "--simulate", H100, "export", "--format", "script, ansible")
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "gpuwizard-export"
    assert sorted(p.name for p in folder.iterdir()) == ["deploy.sh", "playbook.yml"]


def test_an_answers_file_is_planned_for_this_machine_and_exported(tmp_path: Path) -> None:
    config = tmp_path / "answers.yaml"
    options = SetupRequest(env_kind="conda", env_name="train", dcgm=True)
    config.write_text(render_answers(source_for(H100, options)))
    done = gpuwizard(tmp_path, "--simulate", H100, "export", "--config", str(config), "--format", "ansible")  # fmt: skip
    assert done.returncode == 0, done.stderr
    playbook = yaml.safe_load(done.stdout)
    assert "/opt/gpuwizard/miniforge/envs/train" in done.stdout
    assert isinstance(playbook, list) and len(playbook) == 1


def test_an_answers_file_from_another_kind_of_server_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    config = tmp_path / "answers.yaml"
    config.write_text(render_answers(source_for(H100)))
    line = one_line_error(
        gpuwizard(tmp_path, "--simulate", "t4-debian12-fresh", "export", "--config", str(config)),
        code=3,  # as `apply --config` refuses it: these answers do not fit this server
    )
    assert "not the kind the answers were made for" in line and "--accept-changes" in line


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--format", "zip"], "unknown format 'zip'"),
        (["--format", ","], "none given"),
        (["--format", ""], "none given"),
        (["--config", "/nonexistent/answers.yaml"], "/nonexistent/answers.yaml"),
        (["-o", "/proc/version/out"], "-o /proc/version/out"),
        (["-o", "/proc/version"], "-o /proc/version: that is a file"),
    ],
    ids=[
        "unknown format",
        "only a comma",
        "empty format",
        "missing answers file",
        "output folder not creatable",
        "output is a file",
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], fragment: str) -> None:
    line = one_line_error(gpuwizard(tmp_path, "--simulate", H100, "export", *args))
    assert fragment in line


def test_a_machine_with_no_gpu_has_nothing_to_export(tmp_path: Path) -> None:
    done = gpuwizard(tmp_path, "--simulate", "nogpu-ubuntu2204", "export")
    line = one_line_error(done, code=3)  # nothing fits this host, as for `recommend` and `apply`
    assert "no NVIDIA GPU" in line  # and no offer to simulate: this is a simulation


def test_a_machine_set_up_already_exports_with_a_note_that_the_plan_only_verifies(
    tmp_path: Path,
) -> None:
    config = tmp_path / "answers.yaml"
    config.write_text(render_answers(source_for("t4-debian12-fresh")))
    codes = [gpuwizard(tmp_path, "--simulate", "t4-debian12-fresh", "apply", "--yes").returncode for _ in range(2)]  # fmt: skip
    # No reboot: the cloud kernel has no nouveau, so the driver is loaded at once (issue 15 §4).
    assert codes == [0, 0], "installed and finished, then nothing left to do"

    done = gpuwizard(tmp_path, "--simulate", "t4-debian12-fresh", "export", "--config", str(config), "--accept-changes", "--format", "script")  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert "set up already" in done.stderr and "apply --config answers.yaml" in done.stderr
    assert re.search(r"^# Steps \([01]\):$", done.stdout, re.M), "at most the verification is left"
