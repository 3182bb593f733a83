"""GpuWizardApp: the Textual shell. Shows a first frame at once, then hands over to the stages.

gpuwizard.stages holds the wizard's state and shows each stage's screen; screens show and ask,
gpuwizard.flow says where each answer leads, the engine and planner decide, and the runner
(through gpuwizard.runs) does the work in its own process. The stages (engine, planner, every
screen) load in a worker thread, so the first frame does not wait for them.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.worker import Worker, WorkerState

from gpuwizard.doctor.findings import Report
from gpuwizard.screens.doctor import DoctorScreen
from gpuwizard.screens.help import HelpScreen
from gpuwizard.screens.modals import QuitScreen
from gpuwizard.screens.waiting import Waiting

if TYPE_CHECKING:
    from gpuwizard.runner.control import Backend
    from gpuwizard.stages import Wizard


class GpuWizardApp(App[str]):
    TITLE = "gpuwizard"
    CSS_PATH = "app.tcss"
    BINDINGS = [
        Binding("ctrl+c", "quit_wizard", "Quit", show=False),
        Binding("d", "doctor", "Doctor"),
    ]

    def __init__(
        self, backend: Backend | Callable[[], Backend], *, ssh_hint: str = "ssh <this server>"
    ) -> None:
        """``backend``, or how to make it: then it is made after the first frame, off the UI thread."""
        super().__init__()
        self._backend: Backend | None = None if callable(backend) else backend
        self._make_backend: Callable[[], Backend] | None = backend if callable(backend) else None
        self._backend_lock = threading.Lock()
        self.ssh_hint = ssh_hint
        self.wizard: Wizard | None = None
        self.failed = False

    @property
    def backend(self) -> Backend:
        with self._backend_lock:
            if self._backend is None:
                assert self._make_backend is not None
                self._backend = self._make_backend()
            return self._backend

    def on_mount(self) -> None:
        self.push_screen(Waiting())
        if self._backend is not None:
            self.show_machine()
        self.call_after_refresh(self.look)  # the first frame first; the look competes for the CPU

    def show_machine(self) -> None:
        name = self.backend.name
        self.sub_title = (
            f"SIMULATION: {name.removeprefix('simulated ')}" if self.backend.simulated else name
        )

    # ----------------------------------------------------------------------------- start-up
    @work(thread=True, exclusive=True, group="detect", exit_on_error=False)
    def look(self) -> None:
        """Look at the machine, then start the wizard where the machine stands.

        The stages (engine, planner, every screen) load here, off the UI thread, so the first
        frame shows at once.
        """
        if self.wizard is None:
            from gpuwizard.stages import Wizard

            backend = self.backend  # made here, off the UI thread, when only its recipe was given
            self.call_from_thread(self.show_machine)
            self.wizard = Wizard(self, backend, self.ssh_hint)
            # Start-up's objects (modules, screens) never become garbage: out of the collector's
            # sight, a full collection during a log flood takes ~20 ms instead of ~60 (a key waits).
            gc.freeze()
        self.wizard.look()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failure while looking at the machine ends the wizard with one clear line."""
        if event.state is WorkerState.ERROR and event.worker.group in ("detect", "resume"):
            self.failed = True
            what = "look at this machine" if event.worker.group == "detect" else "check the reboot"
            self.exit(f"gpuwizard: could not {what}: {event.worker.error}")

    def action_help(self) -> None:
        self.push_screen(HelpScreen(str(self.backend.state_dir), self.backend.simulated))

    def action_doctor(self) -> None:
        """The doctor over whatever stage shows; it reads the machine in its own worker thread."""
        if not isinstance(self.screen, DoctorScreen):
            self.push_screen(DoctorScreen(self.examine))

    def examine(self) -> Report:
        """The doctor's report on this machine (runs in the Doctor screen's worker thread)."""
        from gpuwizard.doctor.diagnose import diagnose  # detection and checks load on demand

        return diagnose(self.backend.host(), self.backend.state_dir).report

    def action_quit_wizard(self) -> None:
        """Leave at once when nothing runs; explain first when a step is running."""
        if self.wizard is None or not self.wizard.handle.running():
            self.exit("")
            return
        self.push_screen(QuitScreen(running=True), lambda leave: self.exit("") if leave else None)


def run_tui(backend: Backend | Callable[[], Backend]) -> tuple[str, bool]:
    """Run the wizard; returns what to print after the screen is gone, and whether it failed."""
    app = GpuWizardApp(backend, ssh_hint=ssh_hint())
    return app.run() or "", app.failed


def ssh_hint() -> str:
    import os
    import socket

    user = os.environ.get("SUDO_USER") or os.environ.get("USER") or "you"
    return f"ssh {user}@{socket.gethostname()}"
