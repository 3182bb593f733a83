"""HelpScreen: the one key map (screens/keymap.py), and where the logs and state live.

Its first line and its frame say how to close it: a person who opened it by chance needs that
first. Paths break after a ``/`` (BreakingText), never mid-name."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gpuwizard.screens.keymap import KEYS
from gpuwizard.screens.plain import plain

CLOSE = "Esc, q or ? closes this help"


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 76; height: auto; max-height: 90%; border: thick $primary; padding: 1 2; background: $surface;
    }
    """

    def __init__(self, state_dir: str, simulated: bool) -> None:
        super().__init__()
        self.state_dir = state_dir
        self.simulated = simulated

    def compose(self) -> ComposeResult:
        # Two-column grids: a long meaning or path wraps inside its column, under itself.
        keys = Table.grid(padding=(0, 1))
        keys.add_column(style="bold cyan", no_wrap=True)
        keys.add_column()
        for key, meaning in KEYS:
            keys.add_row(f"  {key}", meaning)
        places: list[RenderableType] = []
        for label, path in (
            ("state and journal", self.state_dir),
            ("step logs", f"{self.state_dir}/logs/<run>/<step>.log"),
            ("runner output", f"{self.state_dir}/runner.log"),
        ):  # each path under its label, folded when it is longer than the line
            places.append(Padding(Text(label, style="dim"), (0, 0, 0, 2)))
            places.append(Padding(plain(path), (0, 0, 0, 4)))
        parts: list[RenderableType] = [
            Text(f"{CLOSE}.\n", style="dim"),
            Text("Keys", style="bold"),
            keys,
            Text("\nWhere things are", style="bold"),
            *places,
        ]
        if self.simulated:
            parts.append(
                Text("\nThis is a simulation: nothing on this machine is changed.", style="yellow")
            )
        with VerticalScroll() as frame:
            frame.border_subtitle = CLOSE
            yield Static(Group(*parts))

    def action_close(self) -> None:
        self.dismiss(None)
