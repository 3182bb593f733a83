"""The wizard started on this machine as a person starts it (plain ``gpuwizard``) in a real
terminal of 80x24: without an NVIDIA GPU it says so and shows the simulated server instead."""

from __future__ import annotations

import os
import shlex
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realhost.conftest import GPUWIZARD
from tests.terminal import Terminal, require_tmux

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    require_tmux()
    term = Terminal(f"gw-real-{os.getpid()}", tmp_path)
    yield term
    term.kill()


def wait_until_closed(terminal: Terminal, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while terminal.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not terminal.alive(), terminal.screen()


def test_the_wizard_on_this_machine_starts_and_quits(
    terminal: Terminal, tmp_path: Path, has_gpu: bool
) -> None:
    exit_file = tmp_path / "exit-status"
    wizard = (
        f"env XDG_STATE_HOME={tmp_path / 'state'} TERM=xterm-256color {GPUWIZARD}; "
        f"echo $? > {exit_file}"
    )
    terminal.start(f"sh -c {shlex.quote(wizard)}")
    if has_gpu:
        shown = terminal.wait_for(f"Machine — {socket.gethostname()}")
    else:
        shown = terminal.wait_for("(no GPU here)")
        assert "SIMULATION: h100x8-ubuntu2204-fresh" in shown
    terminal.wait_for("Continue")  # the first stage is up and takes keys
    terminal.press("q")
    wait_until_closed(terminal)
    assert exit_file.read_text().strip() == "0"
