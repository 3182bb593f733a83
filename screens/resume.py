"""ResumeView: after the reboot, the check of what waited for it, then where the setup goes on.

The check runs in the runner (``--check-only``), started as the Resuming stage begins; this view
renders the stage (the run as its events fold) and shows what the newest invocation verified.
Nothing else runs before the person continues.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuwizard.core.facts import BootSignal
from gpuwizard.runner.view import told_by
from gpuwizard.screens.plain import plain
from gpuwizard.screens.shell import StageView
from gpuwizard.setup.flow import Continue
from gpuwizard.setup.stages import Resuming

MARK = {"done": ("✓", "green"), "failed": ("✗", "red"), "pending": ("↻", "yellow")}
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

    def __init__(self, stage: Resuming) -> None:
        super().__init__()
        self.stage = stage

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="resume-body"):
            yield Static(
                Text("Checking what waited for the reboot…", style="bold"), id="resume-status"
            )
            yield Static("", id="resume-checked")

    def on_mount(self) -> None:
        self.render_stage()

    def takes(self, stage: object) -> bool:
        return isinstance(stage, Resuming) and stage.plan is self.stage.plan

    def update(self, stage: object) -> None:
        assert isinstance(stage, Resuming)
        was_checked, self.stage = self.stage.checked, stage
        if stage.checked and not was_checked:
            self.render_stage()

    @property
    def done(self) -> bool:
        return self.stage.checked

    @property
    def checked(self) -> list[tuple[str, str, str]]:
        """(title, state, reason) of each step the check verified."""
        view = self.stage.run
        titles = {s.id: s.title for s in self.stage.plan.steps}
        return [(titles.get(e.step, e.step), view.status(e.step), e.reason) for e in view.checked]

    def render_stage(self) -> None:
        """Once the check has ended: what it verified, and where the setup goes on."""
        stage = self.stage
        if not stage.checked:
            return
        view = stage.run
        checked = self.checked
        upcoming = next(
            (
                s.title
                for s in stage.plan.steps
                if not s.satisfied and view.status(s.id) in ("pending", "failed")
            ),
            None,
        )
        self.query_one("#resume-status", Static).display = False
        told = "person" if stage.rebooted is False else view.rebooted_by
        lines = resume_text(checked, upcoming, view.rebooted, stage.problem, told)
        self.query_one("#resume-checked", Static).update(Group(*lines))

    def action_proceed(self) -> None:
        if self.done:
            self.answer(Continue())
