"""Every exit code in the README's table, each from the real command in a subprocess.

0 done, 1 failed or not confirmed, 2 bad input, 3 nothing fits this host, 10 stopped for a
reboot (run the same command after it), 130 interrupted; the doctor's 0/1/2 are its own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gpuwizard.runner.failpoints import ENV as FAILPOINTS
from gpuwizard.runner.lock import read_run_record
from gpuwizard.sim.sandbox import place_for
from tests.cli.helpers import gpuwizard

pytestmark = pytest.mark.timeout(180)
H100 = "h100x8-ubuntu2204-fresh"


def test_0_done(tmp_path: Path) -> None:
    assert gpuwizard(tmp_path, "--simulate", H100, "recommend").returncode == 0


def test_1_not_confirmed_without_a_terminal(tmp_path: Path) -> None:
    done = gpuwizard(tmp_path, "--simulate", H100, "apply")  # stdin is not a terminal
    assert done.returncode == 1
    assert "not confirmed: nothing was changed" in done.stderr


def test_1_a_runner_that_dies_at_every_start(tmp_path: Path) -> None:
    """Issue 31 (5): after the reboot, every runner dies at its second state write; apply ends
    at once with the runner's own last words and exit 1 (it once started one after another)."""
    assert gpuwizard(tmp_path, "--simulate", H100, "apply", "--yes").returncode == 10
    dies = {FAILPOINTS: "state.after_tmp_write=kill@2"}
    done = gpuwizard(tmp_path, "--simulate", H100, "apply", "--yes", env=dies)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.count("checking again") == 1, "the reboot is judged once"
    assert "its last output: gpuwizard: failpoint state.after_tmp_write hit 2: kill" in done.stdout
    assert "runner.log" in done.stdout


def test_2_bad_input(tmp_path: Path) -> None:
    done = gpuwizard(tmp_path, "recommend", "--torch", "two")
    assert done.returncode == 2 and done.stderr.count("\n") == 1


def test_3_nothing_fits_this_host(tmp_path: Path) -> None:
    done = gpuwizard(tmp_path, "--simulate", "nogpu-ubuntu2204", "recommend")
    assert done.returncode == 3 and "no NVIDIA GPU" in done.stdout


def test_10_stopped_for_a_reboot(tmp_path: Path) -> None:
    done = gpuwizard(tmp_path, "--simulate", H100, "apply", "--yes")
    assert done.returncode == 10, done.stdout + done.stderr
    assert "run the same command to continue" in done.stdout


@pytest.mark.parametrize(
    ("profile", "code"),
    [("h200-ubuntu2404-driver570", 0), ("a100x8-ubuntu2204-neglected", 1), ("nogpu-ubuntu2204", 2)],
    ids=["0 healthy", "1 problems found", "2 nothing to check"],
)
def test_the_doctors_codes(tmp_path: Path, profile: str, code: int) -> None:
    assert gpuwizard(tmp_path, "--simulate", profile, "doctor").returncode == code


def test_130_interrupted(tmp_path: Path) -> None:
    """Ctrl-C while apply follows the runner: the front end stops, the runner goes on."""
    env = {"PATH": "/usr/bin:/bin", "XDG_STATE_HOME": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    env.update((k, v) for k, v in os.environ.items() if k.startswith("COVERAGE_"))
    process = subprocess.Popen(
        [sys.executable, "-m", "gpuwizard", "--simulate", H100, "apply", "--yes"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
        # as a person runs it in a terminal: a test run started in the background (nohup, a
        # non-interactive shell's &) ignores SIGINT, and an ignored signal is inherited
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert process.stdout is not None
    seen = ""
    while not seen.startswith("==> "):  # following the runner's events
        seen = process.stdout.readline()
        assert seen, process.stderr.read() if process.stderr else ""
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    record = read_run_record(place_for(H100, tmp_path / "gpuwizard").state_dir)
    if record is not None:  # the detached runner is not the test's to leave behind
        subprocess.run(["pkill", "-KILL", "-g", str(record.pid)], check=False)
    assert process.returncode == 130, out + err
    assert err.endswith("gpuwizard: interrupted\n")


def test_1_a_question_nobody_answers_fails_its_step_at_once(tmp_path: Path) -> None:
    """Issue 31 (2), for apply: Ctrl-D at the MOK password prompt declines it; the runner stops
    the command at once (the step fails, exit 1) instead of waiting 30 minutes for an answer."""
    import time

    import pexpect

    env = {
        "PATH": "/usr/bin:/bin",
        "XDG_STATE_HOME": str(tmp_path),
        **{k: v for k, v in os.environ.items() if k.startswith("COVERAGE_")},
    }
    child = pexpect.spawn(
        sys.executable,
        ["-m", "gpuwizard", "--simulate", "t4-debian12-secureboot", "apply", "--yes"],
        env=env, cwd=str(tmp_path), timeout=120, encoding="utf-8",
    )  # fmt: skip
    child.expect("One-time MOK password")
    asked = time.monotonic()
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1, child.before
    assert time.monotonic() - asked < 60
    assert "you cancelled it at its question (One-time MOK password)" in child.before
