"""InstallView: each step's why and exact commands, its live log, and the keys that decide.

It renders the Installing stage (wizard/setup/stages.py): the plan, and the run as its events
fold; the one loop follows the runner and brings the view each new stage (``update``). Its keys
are intents answered to the flow (run the step, run all, retry, skip, abort, the secret a step
asks for); it starts, follows and stops nothing itself. Each part is keyed by what it shows and
drawn again only when that changes (``Drawn``; what the keys are: ``install_parts``). The log
pane follows the running step's log file itself. Closing the view, the terminal or the SSH link
never stops a running step.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import cast

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical

from gpuwizard.runner import events as ev
from gpuwizard.runner.view import ahead_line
from gpuwizard.screens import install_parts as parts
from gpuwizard.screens.capabilities import RunDetails
from gpuwizard.screens.modals import ConfirmScreen, SearchScreen, SecretScreen
from gpuwizard.screens.shell import StageView
from gpuwizard.screens.widgets.drawn import Drawn, DrawnLine
from gpuwizard.screens.widgets.log_pane import LogPane
from gpuwizard.screens.widgets.scroll_box import ScrollBox
from gpuwizard.screens.widgets.step_list import StepList
from gpuwizard.setup.flow import Aborted, CancelStep, Retry, RunAll, RunStep, SecretGiven, Skip
from gpuwizard.setup.stages import Installing, Watching

DECIDING = frozenset({"run_step", "run_all", "skip", "retry", "abort"})
ACTING = {
    "waiting": frozenset({"run_step", "run_all", "skip", "abort"}),
    "running": frozenset[str](),
    "failed": frozenset({"retry", "skip", "abort"}),
}
"""Which deciding keys act in each mode (the others are hidden from the footer)."""


def installing(stage: Installing | Watching) -> Installing:
    """The stage as this view shows it: another front end's run shows like this one's."""
    if isinstance(stage, Watching):
        run = stage.run
        return Installing(stage.plan, stage.selection, attach=True, run=run, awaiting=run.running)
    return stage


class InstallView(StageView, can_focus=False):
    BINDINGS = [
        Binding("enter", "run_step", "Run step", priority=True),
        Binding("a", "run_all", "Run all"),
        Binding("s", "skip", "Skip"),
        Binding("r", "retry", "Retry"),
        Binding("x", "abort", "Abort"),
        Binding("l", "wrap", "Wrap/scroll"),
        Binding("f", "follow", "Follow"),
        Binding("slash", "search", "Find", key_display="/"),
        Binding("n", "search_next", "Next match", show=False),
    ]
    FIRST_FOCUS = "LogPane"  # the arrows scroll the log at once; Tab reaches a box that scrolls
    DEFAULT_CSS = """
    InstallView #progress { padding: 0 1; background: $boost; }
    InstallView #details-box { height: auto; max-height: 70%; border: round $primary-darken-2; }
    InstallView.-running #details-box { max-height: 40%; }
    InstallView LogPane { min-height: 5; }
    InstallView #details-box:focus { border: round $accent; }
    InstallView #details { padding: 0 1; }
    InstallView #hint-box { height: auto; max-height: 60%; }
    InstallView #hint { padding: 0 1; color: $warning; }
    InstallView.-failed #details-box { display: none; }
    InstallView #right { width: 1fr; }
    """

    def __init__(
        self,
        stage: Installing | Watching,
        machine: RunDetails,
        now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
        driven_by: str | None = None,
    ) -> None:
        """``driven_by``: another front end drives this run (who, in words): this view only
        watches."""
        super().__init__()
        self.stage = installing(stage)
        self.now = now
        self.driven_by = driven_by
        self.progress = DrawnLine(lambda line: cast(parts.Progress, line), id="progress")
        self.details = Drawn(parts.details_text, id="details")
        self.hint = Drawn(lambda key: parts.hint_text(key, self.stage, machine), id="hint")
        self.shown_mode = ""
        self.searched = ""
        self.asked: ev.PromptShown | None = None
        """The secret question shown last (asked once as it comes; Enter asks it again)."""
        self.log_seen: tuple[str | None, str | None, int] = (None, None, 0)
        self.ahead_seen = 0
        """What the log pane has of the run: its step, its command, and how many of the events'
        output lines (for a step without a log file)."""

    def compose(self) -> ComposeResult:
        yield self.progress
        with Horizontal():
            yield StepList([(s.id, s.title) for s in self.stage.plan.steps])
            with Vertical(id="right"):
                with ScrollBox(id="details-box"):
                    yield self.details
                with ScrollBox(id="hint-box"):
                    yield self.hint
                yield LogPane(id="log")

    def on_mount(self) -> None:
        self.render_stage()
        self.set_interval(1.0, self.show_progress)

    def takes(self, stage: object) -> bool:
        return isinstance(stage, Installing | Watching) and stage.plan is self.stage.plan

    def update(self, stage: object) -> None:
        assert isinstance(stage, Installing | Watching)
        self.stage = installing(stage)
        self.render_stage()

    # ------------------------------------------------------------------------------ state
    @property
    def mode(self) -> str:
        return self.stage.mode

    @property
    def reboot_pending(self) -> bool:
        return self.stage.reboot_pending

    @property
    def current(self) -> str | None:
        """The step the view is about (its id)."""
        step = self.stage.current
        return step.id if step else None

    @property
    def quit_state(self) -> str | None:
        """What quitting leaves behind: a running step, a run paused between steps, or nothing."""
        stage = self.stage
        if stage.mode == "running":
            return "running"
        if stage.run.run_id is not None and stage.pending() and not stage.reboot_pending:
            return "paused"
        return None

    def check_action(self, action: str, _parameters: tuple[object, ...]) -> bool | None:
        """Only the keys that act now: none that decides while another front end drives; run
        keys while waiting (Enter also while a step waits for the person), retry after a
        failure, skip and abort while nothing runs."""
        if action not in DECIDING:
            return True
        if self.driven_by is not None:
            return False
        if self.mode == "running":
            return action in {"run_step", "abort"} and self.stage.asks is not None
        if self.stage.reboot_pending:
            return action in {"run_step", "abort"}
        return action in ACTING[self.mode]

    # ------------------------------------------------------------------------------ rendering
    def render_stage(self) -> None:
        stage = self.stage
        steps = self.query_one(StepList)
        for step in stage.plan.steps:
            steps.set_state(step.id, stage.shown_state(step))
        self.set_class(stage.mode == "failed", "-failed")  # the failure takes the step's place
        self.set_class(stage.mode == "running", "-running")  # the log gets the room
        self.details.key = parts.details_key(stage, self.driven_by)
        self.hint.key = parts.hint_key(stage)
        self.show_log()
        self.show_question()
        self.show_progress()
        if stage.mode != self.shown_mode:  # the footer shows the keys this mode acts on
            self.shown_mode = stage.mode
            self.refresh_bindings()

    def show_progress(self) -> None:
        self.progress.key = parts.progress_line(self.stage, self.now())

    def show_log(self) -> None:
        """The log pane follows the running step's log file; a step without one (a run from
        before log files) shows its commands and the output its events carried."""
        run = self.stage.run
        step, command, said = self.log_seen
        log = self.query_one(LogPane)
        ran = run.steps.get(run.current or "")
        if run.current != step and ran is not None and ran.started is not None:  # it started
            title = next((s.title for s in self.stage.plan.steps if s.id == run.current), "")
            log.add([f"── {title}"])
            log.follow(ran.log)
            command = None
        if log.following is None:
            if run.command != command and run.command is not None:
                log.add([f"$ {run.command}"])
            if run.said > said:
                new = run.said - said
                log.add(list(run.tail[-new:]), max(0, new - len(run.tail)))
        self.log_seen = (run.current, run.command, run.said)
        if len(run.ahead) > self.ahead_seen:  # fetching ahead, between the steps' own lines
            log.add([f"» {ahead_line(event)}" for event in run.ahead[self.ahead_seen :]])
            self.ahead_seen = len(run.ahead)

    def show_question(self) -> None:
        """A secret question is asked once, as it comes (Enter asks it again)."""
        asks = self.stage.asks
        if asks is not None and asks is not self.asked and self.driven_by is None:
            self.ask(asks)

    def ask(self, question: ev.PromptShown) -> None:
        self.asked = question
        self.app.push_screen(SecretScreen(question.text, question.secret), self.answer_secret)

    def answer_secret(self, value: str | None) -> None:
        """The value typed, or Esc: then whether to cancel the step, which waits until told."""
        if value is not None:
            self.answer(SecretGiven(value))
        else:
            self.ask_to_cancel()

    def ask_to_cancel(self) -> None:
        """Esc on the question, or x while it waits: cancel the step, or back to the question."""
        question = self.stage.asks
        step = self.stage.current
        if question is None or step is None:
            return

        def answered(cancel: bool | None) -> None:
            if self.stage.asks is not question:
                return  # answered or ended meanwhile
            if cancel:
                self.answer(CancelStep())
            else:
                self.ask(question)

        said = (
            f"“{step.title}” waits for you: {question.text}\n\nCancel the step? It stops and "
            "fails; r runs it again and asks again. Or type it now (later, Enter brings the "
            "question back)."
        )
        self.app.push_screen(ConfirmScreen(said, "cancel the step", "type it"), answered)

    # ------------------------------------------------------------------------------ the log's keys
    def action_wrap(self) -> None:
        self.query_one(LogPane).toggle_wrap()

    def action_follow(self) -> None:
        self.query_one(LogPane).toggle_follow()

    def action_search(self) -> None:
        self.app.push_screen(SearchScreen(self.searched), self.search_for)

    def search_for(self, term: str | None) -> None:
        if term:
            self.searched = term
            self.query_one(LogPane).search(term)

    def action_search_next(self) -> None:
        log = self.query_one(LogPane)
        if self.searched:
            log.search(self.searched, after=log.found_at)

    # ------------------------------------------------------------------------------ intents
    def action_run_step(self) -> None:
        """The next step (with none left, the check of every step that ends the run); with a
        reboot pending, the reboot screen again (the flow reads the disk); with a question
        waiting, the question."""
        if self.stage.asks is not None:
            self.ask(self.stage.asks)
        elif self.mode == "waiting":
            self.answer(RunStep())

    def action_run_all(self) -> None:
        if self.mode == "waiting":
            self.answer(RunAll())

    def action_retry(self) -> None:
        if self.mode == "failed":
            self.answer(Retry())

    def action_skip(self) -> None:
        """Leave the step undone, once the person has read what that costs: it is marked
        skipped (never done), and Done, the export and the doctor name it."""
        step = self.stage.current
        if self.mode == "running" or step is None:
            return

        def answered(skip: bool | None) -> None:
            if skip and self.stage.current == step and self.mode != "running":
                self.answer(Skip(step.id))

        question = (
            f"Skip “{step.title}”? It is needed here: {step.why}\n\nIt stays undone, marked ⊘ "
            "skipped (not done); Done, the export and `gpuwizard doctor` will name it."
        )
        self.app.push_screen(ConfirmScreen(question, "skip it", "keep it"), answered)

    def action_abort(self) -> None:
        """Abort the install; while a step waits for the person, whether to cancel that step."""
        if self.stage.asks is not None:
            self.ask_to_cancel()
        elif self.mode != "running":
            self.answer(Aborted())
