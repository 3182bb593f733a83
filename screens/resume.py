"""ResumeView: after the reboot, the check of what waited for it, then where the setup goes on.

The check runs in the runner (``--check-only``); this view starts it, folds the run's events
into a ``RunView`` and shows what the newest invocation verified. Nothing else runs before the
person continues.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuwizard.core.facts import BootSignal
from gpuwizard.core.plan import Plan
from gpuwizard.runner.events import StopReason
from gpuwizard.runner.view import RunView, Stopped, fold, told_by
from gpuwizard.screens.capabilities import RunControl
from gpuwizard.screens.plain import plain
from gpuwizard.screens.shell import StageView
from gpuwizard.setup.flow import Continue

MARK = {"done": ("✓", "green"), "failed": ("✗", "red"), "pending": ("↻", "yellow")}
POLL_S = 0.1
Checked = Sequence[tuple[str, str, str]]


def resume_text(
    checked: Checked,
    next_title: str | None,
    rebooted: bool,
    problem: str | None,
    rebooted_by: BootSignal | None = None,
) -> list[RenderableType]:
    """The view's lines: ``checked`` is (title, state, reason) of what waited for the reboot;
    ``rebooted_by`` what told the reboot (named when it is not the boot_id)."""
    table = Table.grid(padding=(0, 1))
    for title, state, reason in checked:
        mark, style = MARK.get(state, ("·", ""))
        table.add_row(Text(mark, style=style), plain(title, "bold"), plain(reason))
    after = f"Next: {next_title}" if next_title else "Nothing is left to do."
    if problem and not checked:
        heading = "The check after the reboot stopped:"
    elif not rebooted and rebooted_by == "person":
        heading = "You said the machine has not restarted: the reboot is offered again."
    elif not rebooted:
        heading = "The machine has not rebooted yet (its boot id is unchanged): the reboot is offered again."
    elif checked:
        heading = f"Welcome back. The machine rebooted{_told(rebooted_by)}; this was checked again:"
    else:
        heading = f"Welcome back. The machine rebooted{_told(rebooted_by)}."
    parts: list[RenderableType] = [Text(heading + "\n", style="bold")]
    if checked:
        parts.append(table)
    if problem:
        parts.append(plain(f"\n{problem}", "bold red"))
    parts.append(plain(f"\n{after}"))
    return parts


def _told(signal: BootSignal | None) -> str:
    """Nothing for the usual boot_id; the stand-in signal is named, so the person can judge it."""
    return f" ({told_by(signal)})" if signal in ("btime", "person") else ""


class ResumeView(StageView):
    BINDINGS = [
        Binding("enter", "proceed", "Continue", priority=True),
    ]
    DEFAULT_CSS = "ResumeView #resume-body { padding: 1 2; }"

    def __init__(self, plan: Plan, control: RunControl, said: bool | None = None) -> None:
        """``said``: the person's answer to "did it restart?" (no boot signal could tell)."""
        super().__init__()
        self.plan = plan
        self.control = control
        self.said = said
        self.checked: list[tuple[str, str, str]] = []
        self.done = False

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="resume-body"):
            yield Static(
                Text("Checking what waited for the reboot…", style="bold"), id="resume-status"
            )
            yield Static("", id="resume-checked")

    def on_mount(self) -> None:
        self.check()

    @work(thread=True, exclusive=True, group="resume", exit_on_error=False)
    def check(self) -> None:
        """Run the runner's check-only pass and fold what it reports (in a worker thread)."""
        view = RunView()
        events = self.control.events()
        if not self.control.start(one_step=False, check_only=True, rebooted=self.said):
            why = "the runner did not start; its output is in runner.log in the state directory"
            view = RunView(ending=Stopped(StopReason.NO_RUNNER, why, None))
        else:
            while True:
                for envelope in events.poll():
                    view = fold(view, envelope)
                if view.invocation and view.ending is not None and not self.control.running():
                    break
                time.sleep(POLL_S)
        self.app.call_from_thread(self.show_checked, view)

    def show_checked(self, view: RunView) -> None:
        titles = {s.id: s.title for s in self.plan.steps}
        self.checked = [
            (titles.get(e.step, e.step), view.status(e.step), e.reason) for e in view.checked
        ]
        ending = view.ending
        problem = (
            ending.why
            if isinstance(ending, Stopped) and ending.reason is not StopReason.PAUSED
            else None
        )
        upcoming = next(
            (
                s.title
                for s in self.plan.steps
                if not s.satisfied and view.status(s.id) in ("pending", "failed")
            ),
            None,
        )
        self.query_one("#resume-status", Static).display = False
        told = "person" if self.said is False else view.rebooted_by
        lines = resume_text(self.checked, upcoming, view.rebooted, problem, told)
        self.query_one("#resume-checked", Static).update(Group(*lines))
        self.done = True

    def action_proceed(self) -> None:
        if self.done:
            self.answer(Continue())
