"""StepList: every step of the plan with its state, the current one marked."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

MARKS = {
    "pending": ("·", "dim"),
    "running": ("▶", "bold yellow"),
    "done": ("✓", "green"),
    "skipped": ("–", "dim"),
    "failed": ("✗", "bold red"),
    "awaiting_reboot": ("↻", "cyan"),
    "next": ("?", "bold"),
}


class StepList(Static):
    DEFAULT_CSS = """
    StepList {
        width: 34;
        height: 1fr;
        border: round $primary-darken-2;
        padding: 0 1;
    }
    """

    def __init__(self, steps: list[tuple[str, str]], **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.steps = steps
        """(id, title) in order."""
        self.states: dict[str, str] = {step_id: "pending" for step_id, _ in steps}

    def set_state(self, step_id: str, state: str) -> None:
        if step_id in self.states:
            self.states[step_id] = state
            self.refresh_list()

    def on_mount(self) -> None:
        self.refresh_list()

    def refresh_list(self) -> None:
        text = Text()
        width = 28
        for step_id, title in self.steps:
            mark, style = MARKS.get(self.states[step_id], ("·", "dim"))
            label = title if len(title) <= width else title[: width - 1] + "…"
            text.append(f"{mark} ", style=style)
            text.append(label + "\n", style=style if self.states[step_id] != "pending" else "")
        self.update(text)
