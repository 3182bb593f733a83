"""GpuWizardApp: the Textual front end of the state machine in gpuwizard.setup.flow.

One task (``conduct``) applies every transition: it carries out the flow's effects through the
driver (off the UI thread), shows the new stage's view in the one screen (awaited), and waits
for that view's answer. Views answer; nothing else changes the stage. The first frame shows at
once: it needs Textual, the shell and the "Looking at this machine" view alone. The flow, the
backend, the engine, the planner and every other view load in that task, after it and off the
UI thread (``make_driver``); the modal screens load when they open.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.worker import Worker, WorkerState

from gpuwizard.screens.shell import Answered, StageShell, StageView
from gpuwizard.screens.waiting import LookingView

if TYPE_CHECKING:
    from gpuwizard.core.request import SetupRequest
    from gpuwizard.doctor.findings import Report
    from gpuwizard.runner.control import Backend
    from gpuwizard.setup.driver import SetupDriver
    from gpuwizard.setup.flow import Answer, Effect, Exit, Stage

EXIT_FAILED, EXIT_REBOOT = 1, 10


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
        self.answers: asyncio.Queue[Answer] = asyncio.Queue()
        self.stage: Stage | None = None
        """The stage the wizard is at; None until the flow has loaded (looking at the machine)."""
        self.exit_code = 0
        self.driver: SetupDriver | None = None

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

    # ------------------------------------------------------------------------- the one task
    @work(exclusive=True, group="conduct", exit_on_error=False)
    async def conduct(self) -> None:
        await self.shell.show(LookingView())
        driver = self.driver = await asyncio.to_thread(self.make_driver)
        from gpuwizard.core.request import SetupRequest
        from gpuwizard.setup.flow import Detect, Exit, Looking, next_stage  # loaded: make_driver

        self.show_machine()
        shown: Stage | None = None
        stage: Stage = Looking(self.request or SetupRequest())
        effects: tuple[Effect, ...] = (Detect(),)
        while True:
            self.stage = stage
            if effects and shown is not None and type(stage) is not type(shown):
                shown = await self.show(stage, driver)  # e.g. "Looking…" while it detects
            answer: Answer | None = None
            for effect in effects:
                if isinstance(effect, Exit):
                    self.finish(effect)
                    return
                answer = await asyncio.to_thread(driver.carry_out, effect)
            if answer is None:
                if stage != shown:
                    shown = await self.show(stage, driver)
                answer = await self.answers.get()
            stage, effects = next_stage(stage, answer)

    def make_driver(self) -> SetupDriver:
        """The backend, the driver, and with them the engine, the planner and every view."""
        from gpuwizard.frontends import stageviews  # noqa: F401 - loaded here, not on the first frame
        from gpuwizard.setup.driver import SetupDriver

        driver = SetupDriver(self.backend)
        _ = driver.table
        return driver

    async def show(self, stage: Stage, driver: SetupDriver) -> Stage:
        from gpuwizard.frontends.stageviews import view_for
        from gpuwizard.setup.flow import label

        while not self.answers.empty():  # answers to the view that is going away
            self.answers.get_nowait()
        await self.shell.show(view_for(stage, driver, self.ssh_hint))
        self.title = label(stage)  # once its view is on show and takes keys
        return stage

    async def on_unmount(self) -> None:
        if self.driver is not None:
            self.driver.close()  # another front end may drive now

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
        ask = QuitScreen(running=state == "running", paused=state == "paused")
        self.push_screen(ask, lambda leave: self.exit("") if leave else None)

    async def action_quit(self) -> None:
        """The command palette's Quit asks the same question as the q key."""
        self.action_quit_wizard()

    def quit_state(self) -> str | None:
        view: StageView | None = self.shell.view
        state = getattr(view, "quit_state", None)
        return state if isinstance(state, str) else None


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
