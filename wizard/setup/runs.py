"""One front end's hold on the machine's run: it launches the detached runner and follows it.

Both front ends (the TUI and ``apply``) launch and follow the runner through here and nowhere
else. A ``RunFollower`` reads events.jsonl from its start (the run's history first, then what is
new), folds every event into one ``RunView`` (wizard/runner/view.py), and says when the runner it
launched, or found at work, is gone and everything it wrote has been read. A runner gone without
its own last word is said to be: it never came up (its output is in runner.log), or it stopped
without one (killed). It never decides where the wizard goes: wizard/setup/flow.py does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpuwizard.core.safetext import one_line
from gpuwizard.machine.detect.platform import read_boot_mark
from gpuwizard.runner import events as ev
from gpuwizard.runner.control import (
    Backend,
    launch,
    request_skip,
    starting,
    wait_until_started,
)
from gpuwizard.runner.events import StopReason
from gpuwizard.runner.follow import EventFollower, Restarted
from gpuwizard.runner.layout import EVENTS
from gpuwizard.runner.lock import read_run_record, runner_status
from gpuwizard.runner.view import RunView, Stopped, fold
from gpuwizard.setup.flow import RunMode

NO_RUNNER = "the runner did not start; its output is in runner.log in the state directory"
CRASHED = "the runner stopped without a final word (killed?)"
DIED = frozenset({StopReason.NO_RUNNER, StopReason.CRASHED})
"""How a runner ends that died rather than stopped: it never came up, it was killed, or it
crashed on a bug (the runner says so itself, then exits)."""
RUNNER_LOG = "runner.log"
_TAIL_BYTES = 4096
_LINE_MAX = 240


@dataclass(frozen=True)
class Progress:
    """What one look at the run found."""

    news: tuple[ev.RunEvent, ...]
    """The events read by this look, in order (a printer prints them)."""
    view: RunView
    """The run as the whole history read so far folds."""
    ended: bool = False
    """The runner this front end launched or found at work is gone, and all it wrote was read."""


class RunFollower:
    """The run on one machine, as one front end sees it: launch, look, send, skip."""

    def __init__(self, machine: Backend, front_end: str = "tui") -> None:
        """``front_end``: "tui" or "apply", recorded with a person's answer in the journal."""
        self.machine = machine
        self.front_end = front_end
        self.events = EventFollower(machine.state_dir / EVENTS)
        self.view = RunView()
        self.awaiting = False
        """A runner was launched or found at work, and its end has not been seen yet."""
        self.launched_at: int | None = None
        """The view's invocation count when this front end launched a runner (None: it found
        one at work): a runner gone before its RunStarted never came up."""
        self.log_from: int | None = None
        """Where runner.log ended when this front end launched its runner: what follows is
        that runner's output (None: it found one at work)."""
        self.deaths = 0
        """Runners in a row, launched or followed here, that died rather than stopped (``DIED``);
        a runner that stops with its own last word sets it back to 0."""

    # -------------------------------------------------------------------------- looking
    def look(self) -> Progress | None:
        """What is new in the run (None: nothing). Never waits."""
        alive = self.awaiting and self.running()  # asked before reading: nothing written is missed
        news: list[ev.RunEvent] = []
        for item in self.events.poll():
            if isinstance(item, Restarted):  # a new run was prepared: its history starts afresh
                self.view = RunView()
            elif isinstance(item, ev.Envelope):
                self.view = fold(self.view, item)
                news.append(item.event)
        if news:
            return Progress(tuple(news), self.view)
        if self.awaiting and not alive:
            self.awaiting = False
            self.view = self.said_gone(self.view)
            died = isinstance(self.view.ending, Stopped) and self.view.ending.reason in DIED
            self.deaths = self.deaths + 1 if died else 0
            return Progress((), self.view, ended=True)
        return None

    def said_gone(self, view: RunView) -> RunView:
        """The view once its runner is gone: as it left it, or saying it never came up or was
        killed, when it did not say how it ended."""
        if self.launched_at is not None and view.invocation == self.launched_at:
            return fold(
                view, _stop(StopReason.NO_RUNNER, NO_RUNNER + self.last_words(), view.current)
            )
        if view.running:
            return fold(view, _stop(StopReason.CRASHED, CRASHED + self.last_words(), view.current))
        return view

    def last_words(self) -> str:
        """The last line the runner launched here printed, as a clause ("" when it printed none,
        or it was found at work): why it died, when it could say (a traceback's last line)."""
        if self.log_from is None:
            return ""
        line = last_line(self.machine.state_dir / RUNNER_LOG, self.log_from)
        return f"; its last output: {line}" if line else ""

    def catch_up(self) -> tuple[RunView, tuple[ev.RunEvent, ...]]:
        """Read the whole history written so far: the run as it folds, and the events read."""
        news: list[ev.RunEvent] = []
        while (progress := self.look()) is not None and progress.news:
            news += progress.news
        return self.view, tuple(news)

    def attach(self) -> bool:
        """Follow the runner at work now, if one is (its end will be told); True if one is.
        With none at work, a history that ends without the runner's last word says it stopped."""
        if self.running():
            self.awaiting, self.launched_at, self.log_from = True, None, None
        elif not self.awaiting:
            self.view = self.said_gone(self.view)
        return self.awaiting

    def running(self) -> bool:
        """A runner is at work on this machine now (this boot, its process alive)."""
        boot = read_boot_mark(self.machine.host())
        return runner_status(self.machine.state_dir, boot) == "running"

    def skip(self, step: str) -> RunView:
        """Mark ``step`` to be skipped by the next runner; a failure the view shows is answered
        by it (the run waits for a go-ahead again)."""
        request_skip(self.machine.state_dir, step)
        self.view = skipped(self.view)
        return self.view

    # -------------------------------------------------------------------------- launching
    def launch(self, mode: RunMode, rebooted: bool | None = None) -> bool:
        """Start a runner for ``mode``; False when it did not come up (the next look says so).
        ``rebooted``: the person's answer to "did it restart?", where no boot signal tells."""
        self.catch_up()  # its invocations so far: the new one is told from them
        flags = list(mode.value)
        if rebooted is not None:
            flags += ["--rebooted", "yes" if rebooted else "no", "--answered-by", self.front_end]
        state_dir = self.machine.state_dir
        with starting(state_dir):  # one front end at a time starts a runner (T11)
            previous = read_run_record(state_dir)
            self.log_from = _size(state_dir / RUNNER_LOG)
            process = launch(
                [*self.machine.runner, *flags],
                state_dir,
                env=self.machine.env,
                systemd=False if self.machine.simulated else None,
            )
            started = wait_until_started(state_dir, process, previous)
        self.awaiting, self.launched_at = True, self.view.invocation
        return started


def last_line(log: Path, start: int) -> str | None:
    """The last line written to ``log`` after byte ``start`` (its last 4 KiB at most), made safe
    to show on one line; None when nothing was."""
    try:
        with log.open("rb") as f:
            size = f.seek(0, 2)
            f.seek(max(start, size - _TAIL_BYTES))
            data = f.read(_TAIL_BYTES)
    except OSError:
        return None
    lines = [one_line(raw) for raw in data.decode("utf-8", "replace").splitlines()]
    line = next((line for line in reversed(lines) if line), None)
    return line if line is None or len(line) <= _LINE_MAX else line[: _LINE_MAX - 1] + "…"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def skipped(view: RunView) -> RunView:
    """The run once the person skipped a step: a failure it shows is answered by that, and the
    run waits for a go-ahead again."""
    ending = view.ending
    if isinstance(ending, Stopped) and ending.reason is not StopReason.PAUSED:
        return fold(view, _stop(StopReason.PAUSED, "skipped", None))
    return view


def _stop(reason: StopReason, why: str, step: str | None) -> ev.Envelope:
    return ev.Envelope(0, "", ev.RunStopped(reason, why, step))
