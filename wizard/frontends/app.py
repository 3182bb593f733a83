"""GpuWizardApp: the Textual front end of the state machine in wizard/setup/flow.py.

The one loop that drives a setup (wizard/setup/conduct.py, the same as ``apply``'s) runs in a
worker thread: it carries out the flow's effects (``Effects``), shows each stage in the one
screen (a new view, or the one on show brought up to date: an install as its run moves on), and
takes the next answer from the views (``Screens``). Views answer; nothing else changes the
stage. The first frame shows at once: it needs Textual, the shell and the "Looking at this
machine" view alone. The flow, the backend, the engine, the planner and every other view load in
that worker, after it (``make_effects``); the modal screens load when they open.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.worker import Worker, WorkerState, get_current_worker

from gpuwizard.core.machine_words import gpuwizard_command
from gpuwizard.screens.looking import LookingView
from gpuwizard.screens.shell import Answered, StageShell, StageView

if TYPE_CHECKING:
    from gpuwizard.core.request import SetupRequest
    from gpuwizard.doctor.findings import Report
    from gpuwizard.runner import events as ev
    from gpuwizard.runner.control import Backend
    from gpuwizard.runner.view import RunView
    from gpuwizard.setup.effects import Effects
    from gpuwizard.setup.flow import Answer, Exit, Stage

EXIT_FAILED, EXIT_REBOOT = 1, 10
FREED_CHECK_S = 1.0
ANSWER_WAIT_S = 0.25
"""How long the loop waits for a view's answer before it looks whether the app is closing."""
"""How often a watching wizard asks whether the front end that drives has gone."""


class Cancelled(Exception):
    """The app is closing: the loop's worker ends."""


class GpuWizardApp(App[str]):
    TITLE = "gpuwizard"
    CSS_PATH = "app.tcss"
    BINDINGS = [
        Binding("ctrl+c", "quit_wizard", "Quit", show=False),
        Binding("d", "doctor", "Doctor", show=False),  # also over modal screens
    ]

    def __init__(
        self,
        backend: Backend | Callable[[], Backend],
        *,
        ssh_hint: str = "ssh <this server>",
        request: SetupRequest | None = None,
    ) -> None:
        """``backend``, or how to make it: then it is made after the first frame, off the UI thread."""
        super().__init__()
        self._backend: Backend | None = None if callable(backend) else backend
        self._make_backend: Callable[[], Backend] | None = backend if callable(backend) else None
        self._backend_lock = threading.Lock()
        self.ssh_hint = ssh_hint
        self.request = request
        """The choices to start from; None: the defaults."""
        self.shell = StageShell()
        self.answers: queue.Queue[Answer] = queue.Queue()
        self.stage: Stage | None = None
        """The stage the wizard is at; None until the flow has loaded (looking at the machine)."""
        self.exit_code = 0
        self.effects: Effects | None = None

    @property
    def backend(self) -> Backend:
        with self._backend_lock:
            if self._backend is None:
                assert self._make_backend is not None
                self._backend = self._make_backend()
            return self._backend

    @property
    def failed(self) -> bool:
        return self.exit_code not in (0, EXIT_REBOOT)

    def on_mount(self) -> None:
        self.push_screen(self.shell)
        if self._backend is not None:
            self.show_machine()
        self.call_after_refresh(
            self.conduct
        )  # the first frame first; the rest competes for the CPU

    def show_machine(self) -> None:
        name = self.backend.name
        self.sub_title = (
            f"SIMULATION: {name.removeprefix('simulated ')}" if self.backend.simulated else name
        )

    # ------------------------------------------------------------------------- the one loop
    @work(thread=True, exclusive=True, group="conduct", exit_on_error=False)
    def conduct(self) -> None:
        self.call_from_thread(self.shell.show, LookingView())  # type: ignore[arg-type] # Textual types its awaitables as Never
        effects = self.effects = self.make_effects()
        from gpuwizard.core.request import SetupRequest  # loaded: make_effects
        from gpuwizard.setup.conduct import conduct
        from gpuwizard.setup.flow import Detect, Looking

        self.call_from_thread(self.show_machine)
        first = Looking(self.request or SetupRequest())
        try:
            conduct(effects, Screens(self, effects), first, (Detect(),))
        except Cancelled:
            return

    def make_effects(self) -> Effects:
        """The backend, the effects, and with them the engine, the planner and every view."""
        from gpuwizard.frontends import stageviews  # noqa: F401 - loaded here, not on the first frame
        from gpuwizard.setup.effects import Effects

        effects = Effects(self.backend)
        _ = effects.table
        return effects

    async def show(self, stage: Stage, effects: Effects) -> None:
        """The stage on the one screen: the view on show brought up to date when it takes it (an
        install whose run moved on), else a new view."""
        from gpuwizard.frontends.stageviews import view_for
        from gpuwizard.setup.flow import label

        self.stage = stage
        view = self.shell.view
        if view is not None and view.takes(stage):
            view.update(stage)
            return
        while not self.answers.empty():  # answers to the view that is going away
            self.answers.get_nowait()
        await self.shell.show(view_for(stage, effects, self.ssh_hint))
        self.title = label(stage)  # once its view is on show and takes keys

    async def on_unmount(self) -> None:
        if self.effects is not None:
            self.effects.close()  # another front end may drive now

    @on(Answered)
    def take_answer(self, message: Answered) -> None:
        """Only the view on show answers; a late answer from one going away is dropped."""
        if message.view is self.shell.view:
            self.answers.put_nowait(message.answer)

    def finish(self, effect: Exit) -> None:
        self.exit_code = effect.code
        self.exit(effect.message, return_code=effect.code)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failure while looking at the machine ends the wizard with one clear line."""
        if event.state is WorkerState.ERROR and event.worker.group == "conduct":
            self.exit_code = EXIT_FAILED
            what = "look at this machine"
            if self.stage is not None:  # the flow has loaded
                from gpuwizard.setup.flow import Looking

                what = what if isinstance(self.stage, Looking) else "go on"
            self.exit(f"gpuwizard: could not {what}: {event.worker.error}", return_code=1)

    # ------------------------------------------------------------------------- app-wide keys
    def action_help(self) -> None:
        from gpuwizard.screens.help import HelpScreen

        self.push_screen(HelpScreen(str(self.backend.state_dir), self.backend.simulated))

    def action_doctor(self) -> None:
        """The doctor over whatever stage shows; it reads the machine in its own worker thread."""
        from gpuwizard.screens.doctor import DoctorScreen

        if not isinstance(self.screen, DoctorScreen):
            self.push_screen(DoctorScreen(self.examine))

    def examine(self) -> Report:
        """The doctor's report on this machine (runs in the Doctor screen's worker thread)."""
        from gpuwizard.doctor.diagnose import diagnose  # detection and checks load on demand

        return diagnose(self.backend.host(), self.backend.state_dir).report

    def action_quit_wizard(self) -> None:
        """Leave at once when nothing runs; explain first when a step runs or a run is paused."""
        from gpuwizard.screens.modals import QuitScreen

        state = self.quit_state()
        if state is None:
            self.exit("")
            return
        if isinstance(self.screen, QuitScreen):
            return
        command = gpuwizard_command(self.backend.cli_args)
        ask = QuitScreen(running=state == "running", paused=state == "paused", command=command)
        self.push_screen(ask, lambda leave: self.exit("") if leave else None)

    async def action_quit(self) -> None:
        """The command palette's Quit asks the same question as the q key."""
        self.action_quit_wizard()

    def quit_state(self) -> str | None:
        view: StageView | None = self.shell.view
        state = getattr(view, "quit_state", None)
        return state if isinstance(state, str) else None


class Screens:
    """The TUI as the one loop's front end: stages shown on the app's screen, answers from its
    views; a watching wizard takes over once the front end that drives has gone."""

    def __init__(self, app: GpuWizardApp, effects: Effects) -> None:
        self.app = app
        self.effects = effects
        self.freed_checked = 0.0

    def show(self, stage: Stage) -> None:
        self.call(self.app.show, stage, self.effects)

    def heard(self, news: Sequence[ev.RunEvent], view: RunView) -> None:
        """Nothing: the views show the run as it folds."""

    def answer(self, stage: Stage, wait_s: float | None) -> Answer | None:
        from gpuwizard.setup.flow import Freed, Watching

        worker = get_current_worker()
        deadline = None if wait_s is None else time.monotonic() + wait_s
        while not worker.is_cancelled:
            left = ANSWER_WAIT_S if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return self.app.answers.get(timeout=min(left, ANSWER_WAIT_S))
            except queue.Empty:
                pass
            if isinstance(stage, Watching) and self.freed():
                return Freed()
            if deadline is not None and time.monotonic() >= deadline:
                return None
        raise Cancelled

    def freed(self) -> bool:
        """The front end that drives has gone (asked about once a second)."""
        now = time.monotonic()
        if now - self.freed_checked < FREED_CHECK_S:
            return False
        self.freed_checked = now
        return not self.effects.driven_elsewhere()

    def finish(self, exit: Exit) -> int:
        self.call(self.app.finish, exit)
        return exit.code

    def call(self, callback: Callable[..., object], *args: object) -> None:
        """Run ``callback`` on the app's loop and wait for it; the app closing ends the loop."""
        if get_current_worker().is_cancelled:
            raise Cancelled
        try:
            self.app.call_from_thread(callback, *args)
        except RuntimeError as error:  # the app is no longer running
            raise Cancelled from error


def run_tui(backend: Backend | Callable[[], Backend]) -> tuple[str, int]:
    """Run the wizard; returns what to print after the screen is gone, and the exit code."""
    app = GpuWizardApp(backend, ssh_hint=ssh_hint())
    message = app.run() or ""
    return message, app.exit_code


def ssh_hint() -> str:
    import os
    import socket

    user = os.environ.get("SUDO_USER") or os.environ.get("USER") or "you"
    return f"ssh {user}@{socket.gethostname()}"
