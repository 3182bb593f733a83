"""GpuWizardApp: maps each stage to its screen and folds the screens' answers into the state.

Nothing else: screens show and ask, gpuwizard.flow says where each answer leads, the engine and
planner decide, and the runner (through gpuwizard.runs) does the work in its own process.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TypeVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from gpuwizard.facts import HostFacts
from gpuwizard.flow import Stage, StartState, after_install, start_stage
from gpuwizard.plan import Plan
from gpuwizard.planner import Options, OptionsError, plan_for
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.result import Choices, Recommendation, Refusal
from gpuwizard.recommend.sizing import assess
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import target_from_facts
from gpuwizard.runner.control import Backend, current
from gpuwizard.runs import RunHandle
from gpuwizard.screens.detect import DetectScreen
from gpuwizard.screens.done import DoneScreen
from gpuwizard.screens.help import HelpScreen
from gpuwizard.screens.install import InstallScreen
from gpuwizard.screens.modals import QuitScreen
from gpuwizard.screens.reboot import RebootScreen
from gpuwizard.screens.recommend import Decision, RecommendScreen
from gpuwizard.screens.resume import ResumeScreen
from gpuwizard.screens.review import ReviewScreen
from gpuwizard.screens.verify import VerifyScreen
from gpuwizard.selection import Selection
from gpuwizard.version import Version

T = TypeVar("T")

EXIT_MESSAGES = {
    "abort": "Install aborted. Finished steps stay done; run gpuwizard again to continue.",
    "reboot-later": "Reboot when ready (sudo reboot), log in again and run gpuwizard to continue.",
    "rebooting": "The machine is rebooting. Log in again and run gpuwizard to continue.",
}


class Waiting(Screen[None]):
    """Shown while the machine is being looked at."""

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("\n  Looking at this machine…", id="waiting")
        yield Footer()


class GpuWizardApp(App[str]):
    TITLE = "gpuwizard"
    CSS_PATH = "app.tcss"
    BINDINGS = [Binding("ctrl+c", "quit_wizard", "Quit", show=False)]

    def __init__(self, backend: Backend, *, ssh_hint: str = "ssh <this server>") -> None:
        super().__init__()
        self.backend = backend
        self.handle = RunHandle(backend)
        self.table = load_table()
        self.ssh_hint = ssh_hint
        self.facts: HostFacts | None = None
        self.choices = Choices()
        self.options = Options()
        self.recommendation: Recommendation | Refusal | None = None
        self.plan: Plan | None = None
        self.selection: Selection | None = None
        self.outcome = ""

    def on_mount(self) -> None:
        name = self.backend.name
        self.sub_title = (
            f"SIMULATION: {name.removeprefix('simulated ')}" if self.backend.simulated else name
        )
        self.push_screen(Waiting())
        self.look()

    # ----------------------------------------------------------------------------- start-up
    @work(thread=True, exclusive=True, group="detect", exit_on_error=False)
    def look(self) -> None:
        facts = self.handle.facts()
        self.call_from_thread(self.start, facts)

    def start(self, facts: HostFacts) -> None:
        self.facts = facts
        state = current(self.backend.state_dir, facts.boot.boot_id)
        journal = state.journal.data if state.journal else None
        if journal is not None:
            self.plan, self.selection = journal.plan, journal.selection
        reboot = journal.reboot if journal else None
        start = StartState(
            runner=state.status,
            has_journal=journal is not None,
            finished=bool(journal and journal.finished),
            reboot_pending=reboot is not None,
            boot_changed=bool(
                reboot and facts.boot.boot_id and facts.boot.boot_id != reboot.boot_id_before
            ),
        )
        self.enter(start_stage(start), attach=state.status == "running")

    def enter(self, stage: Stage, attach: bool = False) -> None:
        handlers = {
            Stage.DETECT: self.show_detect,
            Stage.RECOMMEND: self.show_recommend,
            Stage.REVIEW: self.show_review,
            Stage.REBOOT: self.show_reboot,
            Stage.RESUME: self.show_resume,
            Stage.VERIFY: self.show_verify,
            Stage.DONE: self.show_done,
        }
        if stage is Stage.INSTALL:
            self.show_install(attach)
        else:
            handlers[stage]()

    # ---------------------------------------------------------------------------- the stages
    def show_detect(self) -> None:
        assert self.facts is not None
        findings = assess(self.facts, self.table)
        screen = DetectScreen(self.facts, findings, can_continue=bool(self.facts.hardware.gpus))
        self.switch_to(
            screen, lambda answer: self.enter(Stage.RECOMMEND) if answer == "continue" else None
        )

    def recompute(self, choices: Choices, options: Options) -> Recommendation | Refusal:
        assert self.facts is not None
        return recommend(
            self.table,
            target_from_facts(self.facts, self.table),
            dataclasses.replace(choices, needs_nvcc=options.needs_nvcc),
        )

    def show_recommend(self) -> None:
        result = self.recompute(self.choices, self.options)
        versions = sorted(
            (r.version for r in self.table.torch_releases), key=Version.parse, reverse=True
        )
        screen = RecommendScreen(result, self.choices, self.options, self.recompute, versions)
        self.switch_to(screen, self.recommended)

    def recommended(self, decision: Decision | None) -> None:
        if decision is None:
            self.enter(Stage.DETECT)
            return
        assert self.facts is not None
        self.choices, self.options = decision.choices, decision.options
        try:
            self.selection, self.plan = plan_for(
                self.facts, decision.result, decision.options, self.table
            )
        except (OptionsError, ValueError) as error:
            self.notify(str(error), severity="error")
            self.enter(Stage.RECOMMEND)
            return
        self.enter(Stage.REVIEW)

    def show_review(self) -> None:
        assert self.plan is not None
        self.switch_to(ReviewScreen(self.plan), self.reviewed)

    def reviewed(self, start: bool | None) -> None:
        if not start:
            self.enter(Stage.RECOMMEND)
            return
        assert self.plan is not None
        assert self.selection is not None
        assert self.facts is not None
        self.handle.prepare(self.plan, self.selection, self.facts)
        self.enter(Stage.INSTALL)

    def show_install(self, attach: bool) -> None:
        assert self.plan is not None
        self.switch_to(InstallScreen(self.plan, self.handle, attach), self.installed)

    def installed(self, outcome: str | None) -> None:
        if outcome == "abort":
            self.finish("abort")
            return
        self.enter(after_install(outcome or ""))

    def reboot_reason(self) -> str:
        state = current(self.backend.state_dir, None)
        if state.journal and state.journal.data.reboot:
            step = state.journal.data.record(state.journal.data.reboot.step)
            return step.reason or "a step asked for it"
        return "a step asked for it"

    def show_reboot(self) -> None:
        screen = RebootScreen(
            self.reboot_reason(), f"{self.ssh_hint}   then   gpuwizard", self.backend.simulated
        )
        self.switch_to(screen, self.reboot_answered)

    def reboot_answered(self, now: bool | None) -> None:
        if not now:
            self.finish("reboot-later")
            return
        self.handle.reboot()
        if self.backend.simulated:
            self.push_screen(Waiting())
            self.look()  # the simulated machine is back at once: start up again, as after a real boot
        else:
            self.finish("rebooting")

    @work(thread=True, exclusive=True, group="resume", exit_on_error=False)
    def check_after_reboot(self) -> None:
        self.handle.start(one_step=False, check_only=True)
        while self.handle.running():
            time.sleep(0.1)
        self.handle.poll()  # the events are shown by the install screen; the journal has the results
        self.call_from_thread(self.resumed_checked)

    def show_resume(self) -> None:
        self.switch_to(Waiting(), None)
        self.check_after_reboot()

    def resumed_checked(self) -> None:
        state = current(self.backend.state_dir, None)
        journal = state.journal.data if state.journal else None
        assert journal is not None
        assert self.plan is not None
        titles = {s.id: s.title for s in self.plan.steps}
        waited = [s for s in journal.plan.steps if s.needs_reboot]
        checked = [
            (titles[s.id], journal.record(s.id).state, journal.record(s.id).reason)
            for s in waited
            if journal.record(s.id).state != "skipped"
        ]
        upcoming = next(
            (titles[r.id] for r in journal.steps if r.state in ("pending", "failed")), None
        )
        self.switch_to(ResumeScreen(checked, upcoming), lambda _: self.enter(Stage.INSTALL))

    def show_verify(self) -> None:
        facts = self.handle.facts()
        self.switch_to(VerifyScreen(facts.installs.verification), lambda _: self.enter(Stage.DONE))

    def show_done(self) -> None:
        summary = list(self.plan.summary[:3]) if self.plan else []
        env = self.selection.env.path if self.selection else "/opt/gpuwizard/envs/pytorch"
        self.switch_to(DoneScreen(summary, env, self.handle.logs_hint), None)

    # ---------------------------------------------------------------------------- plumbing
    def switch_to(self, screen: Screen[T], callback: Callable[[T | None], None] | None) -> None:
        """Replace whatever stage is showing with the next one."""
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.push_screen(screen, callback)

    def finish(self, outcome: str) -> None:
        self.outcome = outcome
        self.exit(EXIT_MESSAGES.get(outcome, ""))

    def action_help(self) -> None:
        self.push_screen(HelpScreen(str(self.backend.state_dir), self.backend.simulated))

    def action_quit_wizard(self) -> None:
        """Leave at once when nothing runs; explain first when a step is running."""
        if not self.handle.running():
            self.exit("")
            return
        self.push_screen(QuitScreen(running=True), lambda leave: self.exit("") if leave else None)


def run_tui(backend: Backend) -> str:
    """Run the wizard; returns what to print after the screen is gone."""
    app = GpuWizardApp(backend, ssh_hint=ssh_hint())
    return app.run() or ""


def ssh_hint() -> str:
    import os
    import socket

    user = os.environ.get("SUDO_USER") or os.environ.get("USER") or "you"
    return f"ssh {user}@{socket.gethostname()}"
