"""The relaunch matrix, with real processes: at every stage a front end can be stopped at, a new
`gpuwizard` TUI (in tmux, 80x24) and a new `gpuwizard apply` land on the same stage.

One setup of a simulated 8-GPU server is walked from start to end. Steps are held running by
gates (a scenario rule makes the step's command wait for a file; the test creates it to let the
step go), so "a step is running" is a state the test holds, not a moment it hopes to catch. At
each stop the TUI is started, read and killed (the terminal goes away, as an SSH drop does), then
`apply` is started and read: apply says where it picks up ("==> where it stands: ..."), the TUI
says it in its title. Where a front end changes the machine on arrival (after the reboot both
run the check; a paused run is continued by apply), apply runs on a copy of the state.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gpuwizard.runner.journal import Journal
from gpuwizard.runner.layout import JOURNAL
from gpuwizard.runner.lock import read_run_record, runner_status
from gpuwizard.sim.sandbox import SimPlace, place_for
from tests.terminal import Terminal, require_tmux

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
PROFILE = "h100x8-ubuntu2204-fresh"
GATES = {  # step -> (its command, a word of its arguments): the call the step waits in
    "blacklist-nouveau": ("update-initramfs", "-u"),
    "install-nvidia-driver": ("apt-get", "install nvidia-driver"),
    "install-fabric-manager": ("apt-get", "install nvidia-fabricmanager"),
    "enable-persistence": ("systemctl", "enable nvidia-persistenced"),
    "install-torch": ("uv", "--reinstall-package torch"),
    "verify-torch": ("python", "verify.json"),
}


def env(home: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "XDG_STATE_HOME": str(home),
        "GPUWIZARD_SIM_BENCH_PACE": "0",
        "TERM": "xterm-256color",
        **{k: v for k, v in os.environ.items() if k.startswith("COVERAGE_")},
    }


def place(home: Path) -> SimPlace:
    return place_for(PROFILE, home / "gpuwizard")


class Apply:
    """``gpuwizard apply`` as a process, read as it writes (stdin closed: no terminal)."""

    def __init__(self, home: Path, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gpuwizard", "--simulate", PROFILE, "apply", *args],
            env=env(home),
            cwd=home,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self.out = ""

    def read(self, done: Callable[[], bool], timeout_s: float) -> bool:
        """Read its output until ``done`` holds or it ends; whether ``done`` holds."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while not done():
            assert time.monotonic() < deadline, f"apply took too long; it said:\n{self.out}"
            ready, _, _ = select.select([fd], [], [], 0.2)
            chunk = os.read(fd, 65536) if ready else b"-"
            if not chunk:
                return done()
            self.out += chunk.decode(errors="replace") if ready else ""
        return True

    def read_until(self, *texts: str, timeout_s: float = 90) -> str:
        said = self.read(lambda: all(t in self.out for t in texts), timeout_s)
        assert said, f"apply ended without saying {texts}:\n{self.out}"
        return self.out

    def end(self, timeout_s: float = 120) -> int:
        self.read(lambda: False, timeout_s)  # to the end of its output
        return self.process.wait(timeout=timeout_s)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


def where(stage: str) -> str:
    return f"==> where it stands: {stage}"


class Matrix:
    def __init__(self, home: Path, terminal: Terminal) -> None:
        self.home = home
        self.terminal = terminal
        self.place = place(home)

    # ------------------------------------------------------------------------ front ends
    def tui(self, stage: str, *shows: str) -> Terminal:
        """A new TUI process over this state: its title names ``stage``; left running."""
        gpuwizard = Path(sys.executable).parent / "gpuwizard"
        variables = " ".join(f"{k}={v}" for k, v in env(self.home).items())
        self.terminal.start(f"env {variables} {gpuwizard} --simulate {PROFILE}")
        self.terminal.wait_for(f" {stage} — SIMULATION: ")
        for text in shows:
            self.terminal.wait_for(text)
        return self.terminal

    def tui_lands(self, stage: str, *shows: str) -> None:
        self.tui(stage, *shows)
        self.terminal.kill()

    def apply_attaches(self) -> None:
        """A new apply over a running step: it follows the runner at work, and is killed."""
        apply = Apply(self.home)
        apply.read_until(where("Install"), "A runner is already at work")
        apply.kill()

    def fork(self, name: str) -> Path:
        """A copy of this machine's state, for a front end that changes it on arrival; gates
        are dropped there, so what it starts runs to its end."""
        copy = self.home.parent / f"{self.home.name}-{name}"
        shutil.copytree(self.home / "gpuwizard", copy / "gpuwizard", symlinks=True)
        place(copy).sandbox.write_json("scenario.json", {})
        return copy

    # ------------------------------------------------------------------------- the machine
    def journal(self) -> Journal:
        return Journal.load(self.place.state_dir / JOURNAL)

    def title(self, step: str) -> str:
        return next(s.title for s in self.journal().data.plan.steps if s.id == step)

    def hold_steps(self) -> None:
        rules = [
            {"tool": tool, "match": match, "wait_for": f"/run/gates/{step}"}
            for step, (tool, match) in GATES.items()
        ]
        self.place.sandbox.write_json("scenario.json", {"rules": rules})

    def wait_in(self, step: str, timeout_s: float = 90) -> None:
        """Until the step's gated command has been called (it waits at its gate)."""
        tool, match = GATES[step]
        calls = self.place.sandbox.directory / "calls.jsonl"
        deadline = time.monotonic() + timeout_s
        while True:
            lines = calls.read_text().splitlines() if calls.exists() else []
            if any(
                c["tool"] == tool and match in " ".join(c["argv"][1:])
                for c in map(json.loads, lines)
            ):
                return
            assert time.monotonic() < deadline, f"{step} never reached its gated command"
            time.sleep(0.1)

    def release(self, step: str) -> None:
        gate = self.place.sandbox.path(f"/run/gates/{step}")
        gate.parent.mkdir(parents=True, exist_ok=True)
        gate.touch()

    def boot_id(self) -> str:
        return self.place.sandbox.path("/proc/sys/kernel/random/boot_id").read_text().strip()

    def runner(self) -> str:
        return runner_status(self.place.state_dir, self.boot_id())

    def wait_runner_gone(self, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while self.runner() == "running":
            assert time.monotonic() < deadline, "the runner did not end"
            time.sleep(0.1)

    def step_running(self, step: str) -> None:
        """The matrix's row for a running step: both front ends land on Install, following it."""
        self.wait_in(step)
        assert self.runner() == "running"
        title = self.title(step)
        self.tui_lands("Install", f"now: {title}")
        self.apply_attaches()
        assert self.runner() == "running", "a front end going away stopped the runner"
        self.release(step)


@pytest.fixture
def matrix(tmp_path: Path) -> Iterator[Matrix]:
    require_tmux()
    home = tmp_path / "machine"
    home.mkdir()
    terminal = Terminal(f"gw-matrix-{os.getpid()}", home)
    yield Matrix(home, terminal)
    terminal.kill()
    for state in tmp_path.glob("*/gpuwizard"):
        record = read_run_record(place(state.parent).state_dir)
        if record is not None and record.finished_at is None:
            subprocess.run(["pkill", "-KILL", "-g", str(record.pid)], check=False)


def test_every_stage_a_front_end_stops_at_is_where_a_new_tui_and_a_new_apply_land(
    matrix: Matrix,
) -> None:
    m = matrix
    # Nothing on disk yet: both begin at the machine; apply plans and asks (no terminal: no).
    m.tui_lands("Machine", "Sizing")
    apply = Apply(m.home)
    assert apply.end() == 1 and "Plan for" in apply.out and "where it stands" not in apply.out
    # Stopped while choosing, or reviewing: nothing was decided, so both begin at the machine.
    for walk in ((("Enter", "Choose"),), (("Enter", "Choose"), ("c", "Review"))):
        m.tui("Machine")
        for key, stage in walk:
            m.terminal.press(key)
            m.terminal.wait_for(f" {stage} — SIMULATION: ")
        m.terminal.press("q")
        m.tui_lands("Machine", "Sizing")

    # Each step running, with the front end that started it gone.
    m.hold_steps()
    first = Apply(m.home, "--yes")
    m.wait_in("blacklist-nouveau")
    first.kill()
    for step in ("blacklist-nouveau", "install-nvidia-driver", "install-fabric-manager"):
        m.step_running(step)
    m.step_running("enable-persistence")

    # The runner stopped before the reboot step: both offer the reboot, neither reboots.
    m.wait_runner_gone()
    assert m.journal().data.reboot is not None
    m.tui_lands("Reboot", "A reboot is needed")
    apply = Apply(m.home)
    assert apply.end() == 10, apply.out
    assert where("Reboot") in apply.out and "rebooting" not in apply.out
    rebooted = Apply(m.home, "--yes")
    assert rebooted.end() == 10 and "==> rebooting" in rebooted.out
    assert m.journal().data.reboot is not None, "the check after the reboot has not run yet"

    # After the reboot, before its check: both land on it (each runs the check: apply on a copy).
    apply = Apply(m.fork("before-check"))
    assert apply.end() == 0, apply.out
    assert where("Resume") in apply.out
    m.tui("Resume", "Welcome back", f"Next: {m.title('create-env')}")
    m.terminal.kill()

    # After the check, three launches in a row: Install, waiting at the next step (then paused).
    m.tui_lands("Install", f"next: {m.title('create-env')}")
    apply = Apply(m.fork("after-check"))
    assert apply.end() == 0, apply.out
    assert where("Install") in apply.out and "Continuing the unfinished setup" in apply.out
    m.tui("Install", f"next: {m.title('create-env')}")
    m.terminal.press("Enter")  # run one step, then pause
    m.terminal.wait_for(f"next: {m.title('install-torch')}", timeout_s=90)
    m.terminal.kill()
    m.tui_lands("Install", f"next: {m.title('install-torch')}")
    apply = Apply(m.fork("paused"))
    assert apply.end() == 0, apply.out
    assert where("Install") in apply.out and "Continuing the unfinished setup" in apply.out

    # The steps after the reboot, running.
    second = Apply(m.home, "--yes")
    m.wait_in("install-torch")
    second.kill()
    m.step_running("install-torch")
    m.step_running("verify-torch")
    m.wait_runner_gone()
    assert m.journal().data.finished

    # Finished: both begin at the machine again; apply finds nothing to do.
    m.tui_lands("Machine", "Sizing")
    apply = Apply(m.home)
    assert apply.end() == 0, apply.out
    assert where("Machine") in apply.out and "Nothing to do" in apply.out

    # Stopped at verify, benchmark, export or done: the setup is finished; back at the machine.
    walk: tuple[tuple[str, str], ...] = (("Enter", "Choose"), ("c", "Review"))
    walk += (("s", "Install"), ("a", "Verify"))
    walk += (("Enter", "Benchmark"), ("s", "Export"), ("c", "Done"))
    for stop in ("Verify", "Benchmark", "Export", "Done"):
        m.tui("Machine", "Sizing")
        for key, stage in walk:
            m.terminal.press(key)
            m.terminal.wait_for(f" {stage} — SIMULATION: ", timeout_s=90)
            if stage == stop:
                break
        m.terminal.press("q")
        m.tui_lands("Machine", "Sizing")
