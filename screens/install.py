"""InstallView: each step's why and exact commands, confirm / skip / abort, then its live log.

The runner does the work in its own process; this view starts it for one step at a time (or
for all remaining ones), folds its events into a ``RunView`` and renders that. The view is the
whole story: replaying the run's history on a relaunch shows what watching it live showed. When
the run ends in a way that leads elsewhere (a reboot asked, every step done), the view answers
``RunEnded`` with the disk as the runner left it; the state machine decides where that leads.
Closing the view, the terminal or the SSH link never stops a running step.
Titles, commands, reasons and the log are the machine's text: shown cleaned and plain
(``plain``), never as markup. The log pane follows each step's log file itself.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone

from rich.console import Group, RenderableType
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Static
from textual.worker import get_current_worker

from gpuwizard.core.facts import mount_holding
from gpuwizard.core.hints import KnownError, match
from gpuwizard.core.plan import Plan, StepPlan, WriteFile
from gpuwizard.runner import events as ev
from gpuwizard.runner.events import StopReason
from gpuwizard.runner.view import Finished, RebootAsked, RunView, Stopped, fold
from gpuwizard.screens.capabilities import RunControl
from gpuwizard.screens.modals import SearchScreen, SecretScreen
from gpuwizard.screens.plain import part, plain
from gpuwizard.screens.shell import StageView
from gpuwizard.screens.widgets.log_pane import LogPane
from gpuwizard.screens.widgets.scroll_box import ScrollBox
from gpuwizard.screens.widgets.step_list import StepList
from gpuwizard.setup.flow import Aborted, Freed, RunEnded

FAILURE_LINES = 6
"""The last lines of output a failure shows (the log pane and the log file have the rest)."""
GIB = 1024**3
POLL_S = 0.05
GONE_AFTER_S = 2.0
"""How long a runner may be silent and not alive before the view says it stopped."""


def step_details(step: StepPlan) -> Group:
    parts = [plain(step.title, "bold"), plain(step.why)]
    for action in step.actions:
        parts.append(
            plain(
                f"  {action.display()}"
                if isinstance(action, WriteFile)
                else f"$ {action.display()}",
                "cyan",
            )
        )
    return Group(*parts)


_NOTHING_SHOWN = object()


class RunProgress(Message, bubble=False):
    """Events the follower read: the run's history at first, then what is new."""

    def __init__(self, envelopes: Sequence[ev.Envelope], first: bool) -> None:
        super().__init__()
        self.envelopes = envelopes
        self.first = first


class RunnerGone(Message, bubble=False):
    """The runner process ended without saying how (after its last event was delivered)."""


DECIDING = frozenset({"run_step", "run_all", "skip", "retry", "abort"})
ACTING = {
    "waiting": frozenset({"run_step", "run_all", "skip", "abort"}),
    "running": frozenset[str](),
    "failed": frozenset({"retry", "skip", "abort"}),
}
"""Which deciding keys act in each mode (the others are hidden from the footer)."""


def _elapsed(started: str | None, now: datetime) -> str:
    if started is None:
        return ""
    try:
        seconds = max(0, int((now - datetime.fromisoformat(started)).total_seconds()))
    except ValueError:
        return ""
    return f" · running {seconds // 60}:{seconds % 60:02d}"


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
    InstallView #progress { height: 1; padding: 0 1; background: $boost; }
    InstallView #details-box { height: auto; max-height: 12; border: round $primary-darken-2; }
    InstallView #details-box:focus { border: round $accent; }
    InstallView #details { height: auto; padding: 0 1; }
    InstallView #hint-box { height: auto; max-height: 60%; }
    InstallView #hint { height: auto; padding: 0 1; color: $warning; }
    InstallView.-failed #details-box { display: none; }
    InstallView #right { width: 1fr; }
    """

    def __init__(
        self,
        plan: Plan,
        control: RunControl,
        attach: bool,
        now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
        driven_by: str | None = None,
    ) -> None:
        """``driven_by``: another front end drives this run (who, in words): this view only
        watches, and answers Freed once that front end has gone."""
        super().__init__()
        self.driven_by = driven_by
        self.plan = plan
        self.control = control
        self.attach = attach
        self.now = now
        self.view = RunView()
        self.replayed = False
        """The run's history is folded in: endings from now on happen while this view watches."""
        self.launching = attach
        """A runner was started (or found at work) and its RunStarted is not folded yet."""
        self.auto = False
        self.skipped: set[str] = set()
        self.current: str | None = None
        self.live_hint: str | None = None
        self.prompted: ev.PromptShown | None = None
        self.ended = False
        self.shown_mode = ""
        self.searched = ""
        self.failure: tuple[Stopped, Text] | None = None
        """The failure shown and its text (built once: it may ask the machine for free space)."""
        self.shown: dict[str, object] = {}
        """What each redrawn Static shows now, by id (``show``)."""

    # ------------------------------------------------------------------------------ state
    @property
    def mode(self) -> str:
        """waiting (for a go-ahead) | running | failed: what the keys can do now."""
        if self.launching or self.view.running:
            return "running"
        ending = self.view.ending
        if isinstance(ending, Stopped) and ending.reason is not StopReason.PAUSED:
            return "failed"
        return "waiting"

    def state_of(self, step: StepPlan) -> str:
        if step.id in self.skipped:
            return "skipped"
        status = self.view.status(step.id)
        if status == "pending" and step.satisfied:
            return "skipped"
        return status

    def pending_steps(self) -> list[StepPlan]:
        return [s for s in self.plan.steps if self.state_of(s) in ("pending", "failed")]

    # ------------------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Static("", id="progress")
        with Horizontal():
            yield StepList([(s.id, s.title) for s in self.plan.steps])
            with Vertical(id="right"):
                with ScrollBox(id="details-box"):
                    yield Static("", id="details")
                with ScrollBox(id="hint-box"):
                    yield Static("", id="hint")
                yield LogPane(id="log")

    def on_mount(self) -> None:
        self.render_view()
        self.follow()
        self.set_interval(1.0, self.show_progress)
        if self.driven_by is not None:
            self.set_interval(1.0, self.check_driver)

    def check_action(self, action: str, _parameters: tuple[object, ...]) -> bool | None:
        """Only the keys that act now: none that decides while another front end drives; run
        keys while waiting, retry after a failure, skip and abort while nothing runs."""
        if action not in DECIDING:
            return True
        if self.driven_by is not None:
            return False
        if self.mode == "waiting" and self.reboot_pending:
            return action in {"run_step", "abort"}
        return action in ACTING[self.mode]

    def check_driver(self) -> None:
        if not self.control.driven_elsewhere():
            self.ended = True
            self.answer(Freed())

    # ------------------------------------------------------------------------------ following
    @work(exclusive=True, group="follow", thread=True, exit_on_error=False)
    def follow(self) -> None:
        """Poll the runner's events and post them to this view (a thread: file reads block)."""
        worker = get_current_worker()
        events = self.control.events()
        quiet_since: float | None = None
        first = True
        while not worker.is_cancelled:
            envelopes = events.poll()
            if envelopes or first:
                self.post_message(RunProgress(envelopes, first))
                first = False
                quiet_since = None
            elif self.mode == "running" and not self.launching:
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since > GONE_AFTER_S and not self.control.running():
                    self.post_message(RunnerGone())
                    quiet_since = None
            time.sleep(POLL_S)

    @on(RunProgress)
    def take(self, message: RunProgress) -> None:
        if self.ended:
            return
        log = self.query_one(LogPane)
        for envelope in message.envelopes:
            was_running = self.view.running
            self.view = fold(self.view, envelope)
            self.show_event(envelope.event, log)
            if self.replayed and was_running and self.view.ending is not None:
                self.ended_live()
        if message.first:
            self.replayed = True
            if self.attach and self.view.ending is not None and not self.view.running:
                self.ended_live()  # the runner we came to watch finished before the first look
        self.render_view()

    def show_event(self, event: ev.RunEvent, log: LogPane) -> None:
        match event:
            case ev.RunStarted():
                self.launching = False
            case ev.StepStarted():
                self.current, self.live_hint = event.step, None
                log.follow(event.log)  # the output is in the step's log file, read by its tail
                log.add([f"── {event.title}"])
            case ev.ActionStarted() if not log.following:
                log.add([f"$ {event.command}"])
            case ev.LogLines() if not log.following:  # a run from before log files were followed
                log.add(event.lines, event.dropped)
            case _:
                pass

    def ended_live(self) -> None:
        """The newest invocation ended while this view watched: a reboot asked or all done leads
        elsewhere; a pause, a failure or a stop stay here."""
        if self.driven_by is not None:
            return  # the front end that drives it decides what comes next
        ending = self.view.ending
        self.launching = False
        if isinstance(ending, Stopped) and ending.reason is StopReason.PAUSED and self.auto:
            self.call_after_refresh(self.action_run_step)
        if isinstance(ending, RebootAsked | Finished) or (
            isinstance(ending, Stopped) and ending.reason is StopReason.CHANGED
        ):
            self.ended = True
            self.answer(RunEnded(self.control.disk()))

    # ------------------------------------------------------------------------------ display
    def render_view(self) -> None:
        steps = self.query_one(StepList)
        mode = self.mode
        remaining = self.pending_steps()
        if mode == "waiting":
            self.current = remaining[0].id if remaining else None
        elif self.view.current:
            self.current = self.view.current
        for step in self.plan.steps:
            state = self.state_of(step)
            if mode == "waiting" and step.id == self.current:
                state = "next"
            steps.set_state(step.id, state)
        self.set_class(mode == "failed", "-failed")  # the failure takes the step's place
        self.show_details(mode, remaining)
        self.show_hint(mode)
        self.show_prompt()
        self.show_progress()
        if mode != self.shown_mode:  # the footer shows the keys this mode acts on
            self.shown_mode = mode
            self.refresh_bindings()

    def show(
        self,
        widget_id: str,
        key: object,
        content: Callable[[], RenderableType],
        *,
        layout: bool = True,
    ) -> None:
        """Draw ``content`` in a Static only when ``key`` (what it depends on) changed: an update
        lays the whole screen out again, and a flooding step brings twenty events a second."""
        if self.shown.get(widget_id, _NOTHING_SHOWN) != key:
            self.shown[widget_id] = key
            self.query_one(f"#{widget_id}", Static).update(content(), layout=layout)

    def show_details(self, mode: str, remaining: list[StepPlan]) -> None:
        if self.driven_by is not None:
            driven_by = self.driven_by
            self.show(
                "details",
                ("driven", driven_by),
                lambda: Text.assemble(
                    ("Watching: ", "bold yellow"),
                    part(
                        f"another gpuwizard drives this setup, {driven_by}. Nothing is "
                        "decided here; once it has gone, this one takes over."
                    ),
                ),
            )
            return
        ending = self.view.ending
        if mode == "waiting" and isinstance(ending, RebootAsked):
            reason = ending.reason
            self.show(
                "details",
                ("reboot", reason),
                lambda: Text.assemble(
                    ("A reboot is pending: ", "bold yellow"),
                    part(f"{reason}. "),
                    "Enter shows the reboot screen again; q quits, and gpuwizard continues "
                    "once the machine has rebooted.",
                ),
            )
            return
        if mode == "waiting" and not remaining:
            self.show(
                "details",
                ("nothing left",),
                lambda: Text.assemble(
                    ("Nothing is left to do. ", "bold green"),
                    "Enter checks every step once more and finishes the run.",
                ),
            )
            return
        step = next((s for s in self.plan.steps if s.id == self.current), None)
        if step is not None:
            self.show("details", ("step", step.id), lambda: step_details(step))

    def show_hint(self, mode: str) -> None:
        ending = self.view.ending
        if mode == "failed" and isinstance(ending, Stopped):
            # By identity, as failure_text caches: a retry that fails alike is another failure,
            # with its own last lines (self.failure keeps the ending alive, so its id stays its own).
            self.show("hint", ("failed", id(ending)), lambda: self.failure_text(ending))
            return
        if mode != "running":
            self.show("hint", ("none",), str)
            return
        known = match(self.view.tail)
        if known is None:
            return
        if known.id != self.live_hint:  # a known error in the running step's output, at once
            self.live_hint = known.id
            self.show(
                "hint",
                ("known", known.id),
                lambda: Text.assemble(
                    ("⚠ in the log: ", "bold"), part(f"{known.explanation} {known.fix}")
                ),
            )

    def failure_text(self, ending: Stopped) -> Text:
        """What failed, how, its last lines, and the doctor's hint when a known error matches."""
        if self.failure is not None and self.failure[0] is ending:
            return self.failure[1]
        step = ending.step or self.current or ""
        title = next((s.title for s in self.plan.steps if s.id == step), step)
        text = Text.assemble(("✗ ", "bold red"), part(f"{title}: {ending.why}", "bold"))
        known = match([*self.view.tail, ending.why])
        if known:
            text.append("\ndoctor: ", "bold yellow")
            text.append(*part(f"{known.explanation} {known.fix}{self.full_disk(known)}"))
        if self.view.command:
            text.append("\ncommand: ", "dim")
            text.append(*part(f"$ {self.view.command}", "cyan"))
        last = [line for line in self.view.tail if line.strip()][-FAILURE_LINES:]
        if last:
            text.append("\nlast lines:", "dim")
            for line in last:
                text.append(*part(f"\n  | {line}"))
        log = self.view.steps[step].log if step in self.view.steps else None
        text.append(
            *part(f"\nFull log: {log or self.control.logs_hint}. r retry · s skip · x abort", "dim")
        )
        self.failure = (ending, text)
        return text

    def full_disk(self, known: KnownError) -> str:
        """For a full disk: which file system it is and how much is free on it now."""
        if known.id != "disk-full":
            return ""
        rows = self.control.free_space()
        path = re.search(r"free space in (/\S*?)\.?(?:\s|$)", known.line)
        holding = mount_holding(path.group(1), rows) if path else None
        fullest = holding or min(rows, key=lambda row: row.free_bytes, default=None)
        if fullest is None:
            return " (df did not answer: run `df -h` to see which file system is full)"
        which = "It is" if holding else "The fullest is"
        free = fullest.free_bytes
        amount = f"{free / GIB:.1f} GiB" if free >= GIB else f"{free // 1024**2} MiB"
        return f" {which} {fullest.path}, with {amount} free now."

    def show_prompt(self) -> None:
        prompt = self.view.prompt
        if prompt is not None and prompt.secret and prompt is not self.prompted and self.replayed:
            self.prompted = prompt
            self.app.push_screen(SecretScreen(prompt.text, prompt.secret), self.answer_secret)

    def show_progress(self) -> None:
        todo = [s for s in self.plan.steps if not s.satisfied]
        finished = sum(
            1 for s in todo if self.state_of(s) in ("done", "skipped", "awaiting_reboot")
        )
        title = next((s.title for s in self.plan.steps if s.id == self.current), "")
        mode = self.mode
        elapsed = ""
        running = self.view.steps.get(self.current or "")
        if mode == "running" and running is not None:
            elapsed = _elapsed(running.started, self.now())
        verb = {"waiting": "next", "running": "now", "failed": "failed"}[mode]
        text = f"{finished}/{len(todo)} done · {verb}: {title}{elapsed}"
        # A line of fixed size: repainted without a layout (a layout redraws the whole screen).
        self.show("progress", text, lambda: plain(text), layout=False)

    @on(RunnerGone)
    def runner_gone(self) -> None:
        if self.mode == "running":
            self.launching = False
            why = "the runner stopped without a final word (killed?); r retries the step"
            self.view = fold(
                self.view, ev.Envelope(0, "", ev.RunStopped(StopReason.CRASHED, why, self.current))
            )
            self.render_view()

    def answer_secret(self, value: str | None) -> None:
        if value is not None:
            self.control.send_secret(value)

    # ------------------------------------------------------------------------------ the log
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
    def launch(self, one_step: bool) -> None:
        if self.mode == "running":
            return
        self.launching = True
        self.show("hint", ("none",), str)  # the last failure's text goes
        self.render_view()
        self.start_runner(one_step)

    @work(exclusive=True, group="start", thread=True, exit_on_error=False)
    def start_runner(self, one_step: bool) -> None:
        """Start the runner off the UI thread: it takes a Python start-up, and keys still answer."""
        if not self.control.start(one_step=one_step):
            self.app.call_from_thread(self.runner_did_not_start)

    def runner_did_not_start(self) -> None:
        self.launching = False
        why = "the runner did not start; see runner.log in the state directory"
        stop = ev.RunStopped(StopReason.NO_RUNNER, why, self.current)
        self.view = fold(self.view, ev.Envelope(0, "", stop))
        self.render_view()

    def action_run_step(self) -> None:
        """The next step; with none left, the runner checks them all again and ends the run.
        With a reboot pending (the person chose "Later"), the reboot screen again: the state
        machine decides from the disk."""
        if self.mode == "waiting" and self.reboot_pending:
            self.ended = True
            self.answer(RunEnded(self.control.disk()))
        elif self.mode == "waiting":
            self.launch(one_step=not self.auto and bool(self.pending_steps()))

    @property
    def reboot_pending(self) -> bool:
        return self.replayed and isinstance(self.view.ending, RebootAsked)

    def action_run_all(self) -> None:
        if self.mode == "waiting":
            self.auto = True
            self.launch(one_step=False)

    def action_retry(self) -> None:
        if self.mode == "failed":
            self.launch(one_step=not self.auto)

    def action_skip(self) -> None:
        if self.mode == "running" or self.current is None:
            return
        self.control.skip(self.current)
        self.skipped.add(self.current)
        if self.mode == "failed":  # the failure is answered: back to waiting for a go-ahead
            self.view = fold(
                self.view, ev.Envelope(0, "", ev.RunStopped(StopReason.PAUSED, "skipped", None))
            )
        self.render_view()

    def action_abort(self) -> None:
        if self.mode != "running":
            self.ended = True
            self.answer(Aborted())

    @property
    def quit_state(self) -> str | None:
        """What quitting leaves behind: a running step, a run paused between steps, or nothing."""
        if self.mode == "running":
            return "running"
        if self.view.run_id is not None and self.pending_steps() and not self.reboot_pending:
            return "paused"
        return None
