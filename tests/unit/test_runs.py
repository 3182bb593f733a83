"""The one module that launches and follows the runner (gpuwizard.setup.runs): the history is
folded first, a runner launched or found at work is followed to its end, and a runner gone
without its last word is said to be (it never came up, or it was killed)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gpuwizard.machine.detect import local_host
from gpuwizard.machine.detect.platform import read_boot_mark
from gpuwizard.runner import events as ev
from gpuwizard.runner.control import Backend
from gpuwizard.runner.events import StopReason
from gpuwizard.runner.journal import now
from gpuwizard.runner.layout import EVENTS
from gpuwizard.runner.lock import RunRecord, process_start_ticks, write_run_record
from gpuwizard.runner.view import RebootAsked, Stopped
from gpuwizard.setup.flow import RunMode
from gpuwizard.setup.runs import CRASHED, NO_RUNNER, RunFollower, skipped
from tests.ui.pilots import run_of

STARTED = ev.RunStarted("run-1", 1, None, ("install-headers",))
STEP = ev.StepStarted("install-headers", "Install kernel headers", 1)


def machine(state: Path, runner: tuple[str, ...] = ("false",)) -> Backend:
    return Backend(
        name="test", host=local_host, state_dir=state, runner=runner, reboot=lambda: None,
        simulated=True,
    )  # fmt: skip


def write(state: Path, *events: ev.RunEvent) -> None:
    with (state / EVENTS).open("a", encoding="utf-8") as log:
        for n, event in enumerate(events):
            log.write(ev.encode(n + 1, event))


def runner_alive(state: Path) -> RunRecord:
    """run.json as a runner at work writes it (this very process stands in for it)."""
    boot = read_boot_mark(local_host())
    pid = os.getpid()
    record = RunRecord(pid, process_start_ticks(pid), boot.boot_id, now(), btime=boot.btime)
    write_run_record(state, record)
    return record


def runner_ended(state: Path, record: RunRecord, outcome: str = "reboot") -> None:
    write_run_record(
        state, RunRecord(**{**record.__dict__, "finished_at": now(), "outcome": outcome})
    )


def test_the_history_is_folded_and_nothing_is_awaited(tmp_path: Path) -> None:
    write(tmp_path, STARTED, STEP, ev.RunStopped(StopReason.PAUSED, "one step done"))
    runs = RunFollower(machine(tmp_path))
    progress = runs.look()
    assert progress is not None and len(progress.news) == 3 and not progress.ended
    assert isinstance(progress.view.ending, Stopped)
    assert runs.look() is None, "nothing new, and no runner awaited"
    assert runs.attach() is False and runs.look() is None


def test_a_runner_found_at_work_is_followed_to_its_end(tmp_path: Path) -> None:
    write(tmp_path, STARTED, STEP)
    record = runner_alive(tmp_path)
    runs = RunFollower(machine(tmp_path))
    runs.catch_up()
    assert runs.attach() is True
    assert runs.look() is None, "at work: nothing new yet, not ended"
    write(tmp_path, ev.RebootRequested("reboot", None, 1, "the driver loads at boot"))
    progress = runs.look()
    assert progress is not None and not progress.ended, "its last words come before its end"
    runner_ended(tmp_path, record)
    ended = runs.look()
    assert ended is not None and ended.ended and ended.news == ()
    assert isinstance(ended.view.ending, RebootAsked), "it said how it ended: that stands"


def test_a_runner_gone_without_a_last_word_is_said_to_be_killed(tmp_path: Path) -> None:
    write(tmp_path, STARTED, STEP)
    record = runner_alive(tmp_path)
    runs = RunFollower(machine(tmp_path))
    runs.catch_up()
    runs.attach()
    runner_ended(tmp_path, record, outcome="stopped")  # killed: no event after its step began
    ended = runs.look()
    assert ended is not None and ended.ended
    assert ended.view.ending == Stopped(StopReason.CRASHED, CRASHED, "install-headers")


def test_a_history_that_stops_mid_step_with_no_runner_says_so_at_once(tmp_path: Path) -> None:
    """A relaunch after the runner was killed: not "running" forever."""
    write(tmp_path, STARTED, STEP)
    runs = RunFollower(machine(tmp_path))
    runs.catch_up()
    assert runs.attach() is False
    assert isinstance(runs.view.ending, Stopped) and runs.view.ending.reason is StopReason.CRASHED


def test_a_runner_that_never_comes_up_is_said_never_to_have_started(tmp_path: Path) -> None:
    write(tmp_path, STARTED, STEP, ev.RunStopped(StopReason.PAUSED, "one step done"))
    runs = RunFollower(machine(tmp_path, runner=(sys.executable, "-c", "raise SystemExit(3)")))
    assert runs.launch(RunMode.STEP) is False
    ended = runs.look()
    assert ended is not None and ended.ended
    assert ended.view.ending == Stopped(StopReason.NO_RUNNER, NO_RUNNER, "install-headers")
    assert (tmp_path / "runner.log").exists(), "its output is kept where the message says"


@pytest.mark.parametrize(
    ("events", "answered"),
    [
        pytest.param([STARTED, STEP, ev.RunStopped(StopReason.FAILED, "exited 100", "install-headers")], True, id="a failure: answered"),
        pytest.param([STARTED, STEP, ev.RunStopped(StopReason.PAUSED, "one step done")], False, id="a pause: as it was"),
    ],
)  # fmt: skip
def test_a_skip_answers_a_failure_and_nothing_else(
    events: list[ev.RunEvent], answered: bool
) -> None:
    view = run_of(events)
    after = skipped(view)
    assert (after != view) is answered
    assert isinstance(after.ending, Stopped) and after.ending.reason is (
        StopReason.PAUSED if answered else view.ending.reason  # type: ignore[union-attr]
    )


def test_a_runner_that_dies_is_said_to_with_its_last_words_and_counted(tmp_path: Path) -> None:
    """Issue 31 (5): each runner launched here that dies adds one to ``deaths``, with the last
    line it printed in the why (never an earlier runner's line); one that stops resets it."""
    (tmp_path / "runner.log").write_text("an earlier runner's last line\n")
    write(tmp_path, STARTED, STEP, ev.RunStopped(StopReason.PAUSED, "one step done"))
    dies = (
        sys.executable,
        "-c",
        "import sys; print('OSError: [Errno 28] No space left on device'); sys.exit(1)",
    )
    runs = RunFollower(machine(tmp_path, runner=dies))
    for n in (1, 2):
        assert runs.launch(RunMode.STEP) is False
        ended = runs.look()
        assert ended is not None and ended.ended and runs.deaths == n
        assert ended.view.ending == Stopped(
            StopReason.NO_RUNNER,
            f"{NO_RUNNER}; its last output: OSError: [Errno 28] No space left on device",
            "install-headers",
        )
    silent = RunFollower(machine(tmp_path, runner=(sys.executable, "-c", "raise SystemExit(3)")))
    silent.launch(RunMode.STEP)
    ended = silent.look()
    assert ended is not None and ended.view.ending.why == NO_RUNNER, (
        "it printed nothing: no earlier line"
    )  # type: ignore[union-attr]
    write(tmp_path, STARTED, ev.RunStopped(StopReason.PAUSED, "one step done"))
    record = runner_alive(tmp_path)
    runs.catch_up()
    runs.attach()
    runner_ended(tmp_path, record, outcome="stopped")
    ended = runs.look()
    assert ended is not None and ended.ended and runs.deaths == 0, "a runner that stopped resets it"
