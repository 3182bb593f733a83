"""ResumeScreen: after the reboot, what was checked again and where the setup continues."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from gpuwizard.screens.plain import plain

MARK = {"done": ("✓", "green"), "failed": ("✗", "red"), "pending": ("↻", "yellow")}


class ResumeScreen(Screen[bool]):
    BINDINGS = [
        Binding("enter", "proceed", "Continue", priority=True),
        Binding("q", "app.quit_wizard", "Quit"),
    ]
    DEFAULT_CSS = "ResumeScreen #resume-body { padding: 1 2; }"

    def __init__(
        self,
        checked: Sequence[tuple[str, str, str]],
        next_title: str | None,
        *,
        rebooted: bool = True,
        problem: str | None = None,
    ) -> None:
        """``checked``: (title, state, reason) of the steps that waited for the reboot;
        ``rebooted``: whether the boot changed; ``problem``: why the check stopped, if it did."""
        super().__init__()
        self.checked = checked
        self.next_title = next_title
        self.rebooted = rebooted
        self.problem = problem

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 1))
        for title, state, reason in self.checked:
            mark, style = MARK.get(state, ("·", ""))
            table.add_row(Text(mark, style=style), plain(title, "bold"), plain(reason))
        after = f"Next: {self.next_title}" if self.next_title else "Nothing is left to do."
        if self.problem and not self.checked:
            heading = "The check after the reboot stopped:"
        elif not self.rebooted:
            heading = "The machine has not rebooted yet (its boot id is unchanged): the reboot is offered again."
        elif self.checked:
            heading = "Welcome back. The machine rebooted; this was checked again:"
        else:
            heading = "Welcome back. The machine rebooted."
        yield Header()
        with VerticalScroll(id="resume-body"):
            yield Static(Text(heading + "\n", style="bold"))
            if self.checked:
                yield Static(table)
            if self.problem:
                yield Static(plain(f"\n{self.problem}", "bold red"))
            yield Static(plain(f"\n{after}"))
        yield Footer()

    def action_proceed(self) -> None:
        self.dismiss(True)
