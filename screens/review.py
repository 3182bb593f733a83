"""ReviewView: every step with what it will change, the download and the time; one confirm.

Titles, paths and the summary quote the machine's facts: each is plain text, never markup."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuwizard.core.plan import Plan, StepPlan
from gpuwizard.core.plan_view import describe
from gpuwizard.screens.plain import plain
from gpuwizard.screens.shell import StageView
from gpuwizard.setup.flow import Approved, Back


def plan_table(plan: Plan) -> Table:
    table = Table(expand=True, box=None, padding=(0, 1), show_edge=False)
    table.add_column("#", width=2, justify="right")
    table.add_column("Step", ratio=2)
    table.add_column("Changes", ratio=3, overflow="fold")  # paths wrap, never cut
    table.add_column("MiB", width=5, justify="right")
    table.add_column("min", width=4, justify="right")
    number = 0
    for step in plan.steps:
        if step.satisfied:
            continue
        number += 1
        style = "cyan" if step.reboot else ""
        table.add_row(
            str(number),
            plain(step.title, style),
            plain(describe(step)),
            str(step.download_mib or ""),
            f"{step.minutes:g}",
        )
    return table


def reboots_said(steps: list[StepPlan]) -> str:
    """How many reboots: "1 reboot", "no reboot", "a reboot only if needed", or both kinds."""
    sure = sum(1 for s in steps if s.reboot and not s.only_if_needed)
    maybe = sum(1 for s in steps if s.reboot and s.only_if_needed)
    counted = f"{sure} reboot{'s' if sure != 1 else ''}" if sure else "no reboot"
    if not maybe:
        return counted
    if not sure:
        return "a reboot only if needed"
    return f"{counted}, and one more only if needed"


def totals(plan: Plan) -> Text:
    todo = [s for s in plan.steps if not s.satisfied]
    mib = sum(s.download_mib for s in todo)
    minutes = sum(s.minutes for s in todo)
    done = len(plan.steps) - len(todo)
    rebooting = any(s.reboot for s in todo)
    steps = "1 step" if len(todo) == 1 else f"{len(todo)} steps"
    return Text.assemble(
        (f"{steps} to do", "bold"),
        f" ({done} need nothing) · about {mib / 1024:.1f} GiB to download · about {minutes:.0f} min · ",
        (reboots_said(todo), "bold cyan" if rebooting else ""),
    )


class ReviewView(StageView):
    """Answers Approved to start, Back to change the choices."""

    BINDINGS = [
        Binding("enter", "start", "Start", priority=True),
        Binding("s", "start", "Start", show=False),  # an older key, kept for hands that know it
        Binding("escape,b", "back", "Back"),
    ]
    DEFAULT_CSS = """
    ReviewView #review-body { padding: 0 1; }
    ReviewView #review-summary { margin-bottom: 1; }
    """

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="review-body"):
            yield Static(plain("\n".join(self.plan.summary)), id="review-summary")
            yield Static(totals(self.plan))
            yield Static(plan_table(self.plan))
            yield Static(
                Text(
                    "Nothing changes until you press Enter. Each step asks again before it runs.",
                    style="dim",
                )
            )

    def action_start(self) -> None:
        self.answer(Approved())

    def action_back(self) -> None:
        self.answer(Back())
