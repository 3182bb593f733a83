"""StepList: every step of the plan with its state; the current one is kept in view."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuwizard.screens.plain import plain

MARKS = {
    "pending": ("·", "dim"),
    "running": ("▶", "bold yellow"),
    "done": ("✓", "green"),
    "skipped": ("–", "dim"),
    "left": ("⊘", "yellow"),
    "failed": ("✗", "bold red"),
    "awaiting_reboot": ("↻", "cyan"),
    "next": ("?", "bold"),
}
CURRENT = frozenset({"running", "next", "failed"})
"""States that mean "this is where we are": the list scrolls to show them."""


def row_text(title: str, state: str) -> Table:
    """Mark, then the title; a long title wraps under itself, never cut off."""
    mark, style = MARKS.get(state, ("·", "dim"))
    row = Table.grid(padding=(0, 1, 0, 0))
    row.add_column(width=1, no_wrap=True)
    row.add_column()
    row.add_row(Text(mark, style=style), plain(title, "" if state == "pending" else style))
    return row


class StepList(VerticalScroll, can_focus=False):
    DEFAULT_CSS = """
    StepList {
        width: 34;
        height: 1fr;
        border: round $primary-darken-2;
        padding: 0 1;
    }
    StepList > Static { height: auto; }
    """

    def __init__(self, steps: list[tuple[str, str]], **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.steps = steps
        """(id, title) in order."""
        self.states: dict[str, str] = {step_id: "pending" for step_id, _ in steps}
        self.rows = {step_id: Static(row_text(title, "pending")) for step_id, title in steps}

    def compose(self) -> ComposeResult:
        yield from self.rows.values()

    def set_state(self, step_id: str, state: str) -> None:
        if self.states.get(step_id, state) == state:
            return  # unknown, or shown already: an update would lay the screen out again
        self.states[step_id] = state
        title = dict(self.steps)[step_id]
        row = self.rows[step_id]
        row.update(row_text(title, state))
        if state in CURRENT:
            self.call_after_refresh(self.scroll_to_widget, row, animate=False)
