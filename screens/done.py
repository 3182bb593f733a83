"""DoneScreen: what was installed, where logs and results are, what to run next."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static


class DoneScreen(Screen[None]):
    BINDINGS = [Binding("q,enter", "app.quit_wizard", "Quit")]
    DEFAULT_CSS = "DoneScreen #done-body { padding: 1 2; }"

    def __init__(self, summary: list[str], env_path: str, logs: str) -> None:
        super().__init__()
        self.summary = summary
        self.env_path = env_path
        self.logs = logs

    def compose(self) -> ComposeResult:
        text = Text("Done: the GPU server is set up.\n\n", style="bold green")
        for line in self.summary:
            text.append(f"  {line}\n")
        text.append("\nNext:\n", style="bold")
        text.append(f"  source {self.env_path}/bin/activate\n")
        text.append('  python -c "import torch; print(torch.cuda.device_count())"\n')
        text.append("  gpuwizard detect     # the machine as it is now\n")
        text.append(f"\nLogs: {self.logs}\n", style="dim")
        yield Header()
        with VerticalScroll(id="done-body"):
            yield Static(text)
        yield Footer()
