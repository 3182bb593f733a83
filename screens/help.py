"""HelpScreen: the keys, and where the logs and state live."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = (
    ("enter", "continue / run the next step"),
    ("a", "run all remaining steps without asking each time"),
    ("s", "start the install (review) · skip a step (install)"),
    ("r", "retry a failed step · reboot (reboot screen)"),
    ("x", "abort the install (nothing half-done: finished steps stay done)"),
    ("w", "why not the other options (recommendation)"),
    ("b / esc", "back"),
    ("q", "quit: a running step continues in the background"),
    ("? / F1", "this help"),
)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 76; height: auto; max-height: 22; border: thick $primary; padding: 1 2; background: $surface;
    }
    """

    def __init__(self, state_dir: str, simulated: bool) -> None:
        super().__init__()
        self.state_dir = state_dir
        self.simulated = simulated

    def compose(self) -> ComposeResult:
        text = Text("Keys\n", style="bold")
        for key, meaning in KEYS:
            text.append(f"  {key:<8} ", style="bold cyan")
            text.append(f"{meaning}\n")
        text.append("\nWhere things are\n", style="bold")
        text.append(f"  state and journal  {self.state_dir}\n")
        text.append(f"  step logs          {self.state_dir}/logs/<run>/<step>.log\n")
        text.append(f"  runner output      {self.state_dir}/runner.log\n")
        if self.simulated:
            text.append(
                "\nThis is a simulation: nothing on this machine is changed.\n", style="yellow"
            )
        with VerticalScroll():
            yield Static(text)

    def action_close(self) -> None:
        self.dismiss(None)
