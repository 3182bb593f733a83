"""The real `gpuwizard --simulate` in a real terminal (tmux): keystrokes through a reboot, and a
terminal killed mid-step whose step keeps running and is still there when the wizard comes back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuwizard.runner.lock import read_run_record, runner_status
from gpuwizard.sim.sandbox import place_for
from tests.terminal import Terminal, require_tmux

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
PROFILE = "h100x8-ubuntu2204-fresh"


def simulated_wizard(home: Path) -> str:
    gpuwizard = Path(sys.executable).parent / "gpuwizard"
    return (
        f"env XDG_STATE_HOME={home} TERM=xterm-256color GPUWIZARD_SIM_BENCH_PACE=0.2 "
        f"{gpuwizard} --simulate {PROFILE}"
    )


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    require_tmux()
    term = Terminal(f"gw{os.getpid()}", tmp_path)
    yield term
    term.kill()
    record = read_run_record(place_for(PROFILE, tmp_path / "gpuwizard").state_dir)
    if record is not None:
        subprocess.run(["pkill", "-KILL", "-g", str(record.pid)], check=False)


def test_killing_the_terminal_mid_step_leaves_the_step_running_and_the_wizard_reattaches(
    terminal: Terminal, tmp_path: Path
) -> None:
    place = place_for(PROFILE, tmp_path / "gpuwizard")
    terminal.start(simulated_wizard(terminal.home))
    terminal.wait_for("This machine")
    slow = {"rules": [{"tool": "apt-get", "match": "install nvidia-driver", "sleep_s": 6}]}
    (place.sandbox.directory / "scenario.json").write_text(json.dumps(slow))
    terminal.press("Enter")
    terminal.wait_for("Fits")
    terminal.press("c")
    terminal.wait_for("steps to do")
    terminal.press("s")
    terminal.wait_for("Run step")
    terminal.press("a")
    terminal.wait_for("now: Install the NVIDIA driver")
    terminal.kill()  # the SSH link drops, the terminal goes away
    boot_id = (place.sandbox.root / "proc/sys/kernel/random/boot_id").read_text().strip()
    assert runner_status(place.state_dir, boot_id) == "running"

    terminal.start(simulated_wizard(terminal.home))
    shown = terminal.wait_for("now: Install the NVIDIA driver")
    assert "running" in shown  # reattached to the same step, still at work
    terminal.wait_for("A reboot is needed", timeout_s=90)
    terminal.press("r")
    terminal.wait_for("Welcome back")
    terminal.press("Enter")
    terminal.wait_for("Run step")
    terminal.press("a")
    terminal.wait_for("PyTorch works on every GPU", timeout_s=90)
    terminal.press("Enter")
    terminal.wait_for("⏎ Begin")
    terminal.press("Enter")
    shown = terminal.wait_for("amp-bf16 x8", timeout_s=60)  # the DDP line joins the live chart
    assert "fp32" in shown and "tf32" in shown
    terminal.wait_for("Finished.", timeout_s=60)
    terminal.press("Enter")
    terminal.wait_for("Folder to write to")
    terminal.press("c")
    terminal.wait_for("Done: the GPU server is set up")
    calls = [
        json.loads(line)
        for line in (place.sandbox.directory / "calls.jsonl").read_text().splitlines()
    ]
    driver_installs = [
        c for c in calls if c["tool"] == "apt-get" and "nvidia-driver-580-server-open" in c["argv"]
    ]
    assert len(driver_installs) == 1  # reattaching never ran the step a second time
