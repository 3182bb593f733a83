"""InstallScreen: each step's why and exact commands, confirm / skip / abort, then its live log.

The runner does the work in its own process; this screen starts it for one step at a time (or
for all remaining ones), follows its events through a worker, and shows them. Closing the
screen, the terminal or the SSH link never stops a running step. Titles, commands, reasons and
the log are the machine's text: shown cleaned and plain (``plain``), never as markup.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Group
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static
from textual.worker import get_current_worker

from gpuwizard.hints import match
from gpuwizard.plan import Plan, Run, StepPlan
from gpuwizard.runner import events as ev
from gpuwizard.screens.capabilities import RunControl
from gpuwizard.screens.messages import RunnerGone, RunProgress
from gpuwizard.screens.modals import QuitScreen, SecretScreen
from gpuwizard.screens.plain import part, plain
from gpuwizard.screens.widgets.log_pane import LogPane
from gpuwizard.screens.widgets.step_list import StepList

POLL_S = 0.05


def step_details(step: StepPlan) -> Group:
    parts = [plain(step.title, "bold"), plain(step.why)]
    for action in step.actions:
        parts.append(
            plain(
                f"$ {action.display()}" if isinstance(action, Run) else f"  {action.display()}",
                "cyan",
            )
        )
    return Group(*parts)


class InstallScreen(Screen[str]):
    """Dismisses with "reboot", "done" or "abort"."""

    BINDINGS = [
        Binding("enter", "run_step", "Run step", priority=True),
        Binding("a", "run_all", "Run all"),
        Binding("s", "skip", "Skip"),
        Binding("r", "retry", "Retry"),
        Binding("x", "abort", "Abort"),
        Binding("q", "quit_screen", "Quit"),
        Binding("question_mark,f1", "app.help", "Help"),
    ]
    DEFAULT_CSS = """
    InstallScreen #progress { height: 1; padding: 0 1; background: $boost; }
    InstallScreen #details-box { height: auto; max-height: 12; border: round $primary-darken-2; }
    InstallScreen #details { height: auto; padding: 0 1; }
    InstallScreen #hint { height: auto; padding: 0 1; color: $warning; }
    InstallScreen #right { width: 1fr; }
    """

    def __init__(
        self,
        plan: Plan,
        control: RunControl,
        attach: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.plan = plan
        self.control = control
        self.attach = attach
        self.clock = clock
        self.current: str | None = None
        self.mode = "waiting"
        """waiting (for a go-ahead) | running | failed."""
        self.started_at: float | None = None
        self.auto = False
        self.tail: list[str] = []
        self.failed_step: str | None = None
        self.ended = False
        self.live_hint: str | None = None
        """The known error shown while the step still runs, by id."""
        self.progress_text = ""
        self.starting = False
        """A runner is being started (a slow start is not a runner gone)."""

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="progress")
        with Horizontal():
            yield StepList([(s.id, s.title) for s in self.plan.steps])
            with Vertical(id="right"):
                with VerticalScroll(id="details-box"):
                    yield Static("", id="details")
                yield Static("", id="hint")
                yield LogPane(id="log")
        yield Footer()

    def on_mount(self) -> None:
        steps = self.query_one(StepList)
        for step in self.plan.steps:
            if step.satisfied:
                steps.set_state(step.id, "skipped")
        for step_id, state, _ in self.control.journal_steps():  # resumed: what already ran
            if state != "pending":
                steps.set_state(step_id, state)
        self.follow()
        self.set_interval(1.0, self.show_progress)
        if self.attach:
            self.mode = "running"
        self.show_next()

    # ------------------------------------------------------------------------------ display
    def pending_steps(self) -> list[StepPlan]:
        states = self.query_one(StepList).states
        return [s for s in self.plan.steps if states[s.id] in ("pending", "failed", "next")]

    def show_next(self) -> None:
        if self.mode != "waiting":
            return
        remaining = self.pending_steps()
        if not remaining:
            self.query_one("#details", Static).update(
                Text("Every step has run.", style="bold green")
            )
            return
        step = remaining[0]
        self.current = step.id
        self.query_one(StepList).set_state(step.id, "next")
        self.query_one("#details", Static).update(step_details(step))
        self.show_progress()

    def show_progress(self) -> None:
        total = len([s for s in self.plan.steps if not s.satisfied])
        states = self.query_one(StepList).states
        finished = sum(
            1
            for s in self.plan.steps
            if not s.satisfied and states[s.id] in ("done", "skipped", "awaiting_reboot")
        )
        title = next((s.title for s in self.plan.steps if s.id == self.current), "")
        elapsed = ""
        if self.mode == "running" and self.started_at is not None:
            seconds = int(self.clock() - self.started_at)
            elapsed = f" · running {seconds // 60}:{seconds % 60:02d}"
        verb = {"waiting": "next", "running": "now", "failed": "failed"}[self.mode]
        text = f"{finished}/{total} done · {verb}: {title}{elapsed}"
        if (
            text != self.progress_text
        ):  # a line of fixed size: repaint it, no layout (a full redraw)
            self.progress_text = text
            self.query_one("#progress", Static).update(plain(text), layout=False)

    # ------------------------------------------------------------------------------ following
    @work(exclusive=True, group="follow", thread=True, exit_on_error=False)
    def follow(self) -> None:
        """Poll the runner's events and post them to this screen (a thread: file reads block)."""
        worker = get_current_worker()
        quiet_since: float | None = None
        while not worker.is_cancelled:
            events = self.control.poll()
            for event in events:
                self.post_message(RunProgress(event))
            if events:
                quiet_since = None
            elif self.mode == "running" and not self.starting:
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since > 2 and not self.control.running():
                    self.post_message(RunnerGone())
                    quiet_since = None
            time.sleep(POLL_S)

    def finish(self, outcome: str) -> None:
        if not self.ended:
            self.ended = True
            self.dismiss(outcome)

    @on(RunProgress)
    def show_event(self, message: RunProgress) -> None:  # noqa: C901 - one branch per event kind
        event = message.event
        if self.ended:
            return
        steps = self.query_one(StepList)
        log = self.query_one(LogPane)
        match event:
            case ev.StepStarted():
                self.current, self.mode, self.started_at, self.tail = (
                    event.step,
                    "running",
                    self.clock(),
                    [],
                )
                steps.set_state(event.step, "running")
                self.query_one("#hint", Static).update("")
                self.live_hint = None
                log.follow(event.log)  # the output is in the step's log file, read by its tail
                log.add([f"── {event.title}"])
            case ev.ActionStarted() if not log.following:
                log.add([f"$ {event.command}"])
            case ev.LogLines():
                self.tail = (self.tail + list(event.lines))[-20:]
                if not log.following:  # a run's events from before log files were followed
                    log.add(event.lines, event.dropped)
                self.show_live_hint()
            case ev.StepSkipped():
                steps.set_state(event.step, "skipped")
            case ev.StepAwaitingReboot():
                steps.set_state(event.step, "awaiting_reboot")
            case ev.StepFinished():
                steps.set_state(event.step, "done" if event.ok else "failed")
                if not event.ok:
                    self.failed(event.step, event.reason, event.log)
                elif self.live_hint is not None:  # it passed after all: the warning is moot
                    self.live_hint = None
                    self.query_one("#hint", Static).update("")
            case ev.PromptShown() if event.secret:
                self.app.push_screen(SecretScreen(event.text), self.answer_secret)
            case ev.RebootRequested():
                self.finish("reboot")
            case ev.RunStopped():
                self.stopped(event)
            case ev.RunFinished():
                self.finish("done")
            case _:
                pass
        self.show_progress()

    def show_live_hint(self) -> None:
        """A known error in the running step's output shows at once, before the step ends."""
        if self.mode != "running":
            return
        hint = match(self.tail)
        if hint is None or hint.id == self.live_hint:
            return
        self.live_hint = hint.id
        self.query_one("#hint", Static).update(
            Text.assemble(("⚠ in the log: ", "bold"), part(f"{hint.explanation} {hint.fix}"))
        )

    def stopped(self, event: ev.RunStopped) -> None:
        if event.reason == "paused":
            self.mode = "waiting"
            self.show_next()
            if self.auto:
                self.action_run_step()
        elif event.reason == "reboot":
            self.finish("reboot")
        elif self.mode != "failed":
            self.failed(event.step or self.current or "", event.why, None)

    def failed(self, step_id: str, reason: str, log: str | None) -> None:
        self.mode, self.auto, self.failed_step = "failed", False, step_id
        hint = match([*self.tail, reason])
        text = Text.assemble(("✗ ", "bold red"), part(reason, "bold"))
        if hint:
            text.append(*part(f"\n{hint.explanation} {hint.fix}"))
        text.append(
            *part(f"\nFull log: {log or self.control.logs_hint}. r retry · s skip · x abort", "dim")
        )
        self.query_one("#hint", Static).update(text)

    @on(RunnerGone)
    def runner_gone(self) -> None:
        if self.mode == "running":
            self.failed(
                self.current or "",
                "the runner stopped without a final word (killed?); r retries the step",
                None,
            )

    def answer_secret(self, value: str | None) -> None:
        if value is not None:
            self.control.send_secret(value)

    # ------------------------------------------------------------------------------ intents
    def launch(self, one_step: bool) -> None:
        if self.mode == "running":
            return
        self.mode, self.started_at = "running", self.clock()
        self.query_one("#hint", Static).update("")
        self.starting = True
        self.start_runner(one_step)

    @work(exclusive=True, group="start", thread=True, exit_on_error=False)
    def start_runner(self, one_step: bool) -> None:
        """Start the runner off the UI thread: it takes a Python start-up, and keys still answer."""
        try:
            started = self.control.start(one_step=one_step)
        finally:
            self.starting = False
        if not started:
            self.app.call_from_thread(
                self.failed,
                self.current or "",
                "the runner did not start; see runner.log in the state directory",
                None,
            )

    def action_run_step(self) -> None:
        if self.mode in ("waiting",):
            self.launch(one_step=not self.auto)

    def action_run_all(self) -> None:
        if self.mode == "waiting":
            self.auto = True
            self.launch(one_step=False)

    def action_retry(self) -> None:
        if self.mode == "failed":
            self.mode = "waiting"
            self.launch(one_step=not self.auto)

    def action_skip(self) -> None:
        step = self.failed_step if self.mode == "failed" else self.current
        if self.mode == "running" or step is None:
            return
        self.control.skip(step)
        self.query_one(StepList).set_state(step, "skipped")
        self.mode = "waiting"
        self.query_one("#hint", Static).update("")
        self.show_next()

    def action_abort(self) -> None:
        if self.mode != "running":
            self.finish("abort")

    def action_quit_screen(self) -> None:
        self.app.push_screen(QuitScreen(running=self.mode == "running"), self.quit_answered)

    def quit_answered(self, leave: bool | None) -> None:
        if leave:
            self.app.exit(0)
