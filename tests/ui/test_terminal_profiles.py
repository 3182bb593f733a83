"""Every built-in profile through the whole simulated flow in a real terminal at 80x24 (tmux),
as a person would go: on every screen, no log line is cut, no fact is false (another release's
codename, GPUDirect RDMA on a host without RDMA devices), and the benchmark's chart has labelled
axes. Each screen's key is pressed once, when that screen shows."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuwizard.runner.events import FetchedAhead, StepStarted, decode
from gpuwizard.runner.layout import EVENTS
from gpuwizard.runner.lock import read_run_record
from gpuwizard.runner.view import ahead_line
from gpuwizard.screens.widgets.throughput_chart import X_LABEL, Y_LABEL
from gpuwizard.sim.sandbox import place_for
from tests.conftest import PROFILE_NAMES, facts_of, profile_dir
from tests.terminal import Terminal, require_tmux

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]
CODENAMES = {"focal", "jammy", "noble", "bookworm", "trixie"}
MOK_PASSWORD = "Gw-test-42"
FLOW_S = 360

# (what shows, the key it takes), first match wins: a later stage's screen before an earlier one's
STEPS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("Now the same again, to confirm",), (MOK_PASSWORD, "Enter")),
    (("One-time MOK password",), (MOK_PASSWORD, "Enter")),
    (("Folder to write to",), ("c",)),
    (("r Run again",), ("Enter",)),
    (("⏎ Begin",), ("Enter",)),
    (("PyTorch works on every GPU",), ("Enter",)),
    (("Welcome back",), ("Enter",)),
    (("A reboot is needed",), ("r",)),
    (("a Run all",), ("a",)),
    (("⏎ Start",), ("Enter",)),
    (("Why not others",), ("c",)),
    (("This machine",), ("Enter",)),
)


def profiles() -> list[str]:
    return [p for p in PROFILE_NAMES if facts_of(p).hardware.gpus]


def wizard(home: Path, profile: str) -> str:
    gpuwizard = Path(sys.executable).parent / "gpuwizard"
    return (
        f"env XDG_STATE_HOME={home} TERM=xterm-256color GPUWIZARD_SIM_BENCH_PACE=0.05 "
        f"{gpuwizard} --simulate {profile}"
    )


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    require_tmux()
    term = Terminal(f"gwp{os.getpid()}", tmp_path)
    yield term
    term.kill()


def log_rows(screen: str) -> list[str]:
    """The rows inside the log pane's box, without its border and padding."""
    lines = screen.splitlines()
    top = next((i for i, line in enumerate(lines) if "╭─ log" in line), None)
    if top is None:
        return []
    left, right = lines[top].index("╭─ log"), lines[top].rindex("╮")
    rows = []
    for line in lines[top + 1 :]:
        if len(line) <= right or line[left] != "│":
            break
        rows.append(line[left + 2 : right - 3].rstrip())  # the border, padding and scroll bar off
    return rows


def logged_lines(state_dir: Path) -> list[str]:
    """What the pane can show: the step logs' lines and its own headings (each step's title),
    and what fetching ahead said (runner/prefetch.py)."""
    titles = []
    events = state_dir / EVENTS
    if events.exists():
        for line in events.read_text(errors="replace").splitlines():
            envelope = decode(line)
            if isinstance(envelope.event, StepStarted):
                titles.append(f"── {envelope.event.title}")
            if isinstance(envelope.event, FetchedAhead):
                titles.append(f"» {ahead_line(envelope.event)}")
    return titles + [
        line
        for log in sorted(state_dir.glob("logs/*/*.log"))
        for line in log.read_text(errors="replace").splitlines()
    ]


GAP_MARKER = re.compile(r"\[….*?thelogfilehaseverything…\]")
"""The pane's own line where it left lines out (a slow frame under load), spaces removed."""


def bare(text: str) -> str:
    """``text`` without its spaces: a line wrapped at a space loses it at the row's end."""
    return "".join(text.split())


def assert_no_cut_line(screen: str, state_dir: Path) -> None:
    """A row that fills the pane continues on the next row (the line wraps, after a / or - or
    between words, whose space ends the row) or ends its line."""
    rows = log_rows(screen)
    width = max((len(row) for row in rows), default=0)
    lines = [bare(line) for line in logged_lines(state_dir)]
    lines += GAP_MARKER.findall(bare("".join(rows)))
    for row, below in itertools.pairwise(rows):
        if len(row) < width - 3 or not below.strip():
            continue
        joined = bare(row + below[:8])
        ends_a_line = any(line.endswith(bare(row)) for line in lines)
        assert ends_a_line or any(joined in line for line in lines), f"cut: {row!r}\n{screen}"


def assert_true_facts(screen: str, profile: str) -> None:
    facts = facts_of(profile)
    own = facts.os.version_codename if facts.os else None
    for codename in CODENAMES - {own}:
        assert f" {codename} " not in f" {screen} ", f"{codename} shown on {profile}:\n{screen}"
    if not (profile_dir(profile) / "root/sys/class/infiniband").is_dir():
        assert "RDMA" not in screen and "peermem" not in screen, screen


@pytest.mark.parametrize("profile", profiles())
def test_the_whole_flow_at_80x24_shows_whole_lines_true_facts_and_a_labelled_chart(
    terminal: Terminal, tmp_path: Path, profile: str
) -> None:
    state_dir = place_for(profile, tmp_path / "gpuwizard").state_dir
    terminal.start(wizard(terminal.home, profile))
    acted: str | None = None
    charted = False
    deadline = time.monotonic() + FLOW_S
    try:
        while time.monotonic() < deadline:
            screen = terminal.screen()
            assert "r Retry" not in screen, f"a step failed on {profile}:\n{screen}"
            assert_true_facts(screen, profile)
            if screen == terminal.screen():  # a whole frame: Textual rewrites only changed rows,
                assert_no_cut_line(screen, state_dir)  # so a capture mid-frame mixes two
            if "Done: the GPU server is set up" in screen:
                break
            if "r Run again" in screen:
                charted = charted or (Y_LABEL in screen and X_LABEL in screen)
            marker, keys = next(
                ((m[0], k) for m, k in STEPS if all(t in screen for t in m)), (None, ())
            )
            if marker is not None and marker != acted:
                terminal.press(*keys)
                acted = marker
            time.sleep(0.3)
        else:
            raise AssertionError(f"{profile} did not finish; the screen was:\n{terminal.screen()}")
    finally:
        record = read_run_record(state_dir)
        if record is not None:
            subprocess.run(["pkill", "-KILL", "-g", str(record.pid)], check=False)
    assert charted, "the benchmark's chart showed labelled axes"
