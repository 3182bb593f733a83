"""RefusedView: why the wizard cannot go on, with the way back where there is one.

The reason can quote the machine or an answers file, so it is shown cleaned (``plain.part``).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuwizard.screens.plain import part
from gpuwizard.screens.shell import StageView
from gpuwizard.setup.flow import Back, Continue


class RefusedView(StageView):
    """Answers Back (when a choice can be changed) or Continue, which leaves."""

    BINDINGS = [
        Binding("escape,b", "back", "Back"),
        Binding("enter,q", "leave", "Quit", priority=True),
    ]
    DEFAULT_CSS = "RefusedView #refused-body { padding: 1 2; }"

    def __init__(self, why: str, can_go_back: bool) -> None:
        super().__init__()
        self.why = why
        self.can_go_back = can_go_back

    def compose(self) -> ComposeResult:
        after = "Esc goes back to change a choice; q leaves." if self.can_go_back else "q leaves."
        with VerticalScroll(id="refused-body"):
            yield Static(
                Text.assemble(
                    ("This cannot go on:\n\n", "bold red"), part(self.why), f"\n\n{after}"
                )
            )

    def check_action(self, action: str, _parameters: tuple[object, ...]) -> bool | None:
        return self.can_go_back if action == "back" else True

    def action_back(self) -> None:
        self.answer(Back())

    def action_leave(self) -> None:
        self.answer(Continue())
