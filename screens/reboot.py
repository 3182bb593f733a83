"""RebootView: why a reboot is needed, what happens, and how to come back."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuwizard.screens.plain import part
from gpuwizard.screens.shell import StageView
from gpuwizard.setup.flow import RebootLater, RebootNow


class RebootView(StageView):
    """Answers RebootNow or RebootLater."""

    BINDINGS = [
        Binding("r", "reboot", "Reboot now"),
        Binding("escape", "later", "Later"),
    ]
    DEFAULT_CSS = "RebootView #reboot-body { padding: 1 2; }"

    def __init__(self, reason: str, come_back: str, simulated: bool) -> None:
        super().__init__()
        self.reason = reason
        self.come_back = come_back
        self.simulated = simulated

    def compose(self) -> ComposeResult:
        what = (
            "The simulated machine reboots: a new boot, the new modules load, and the wizard picks up by itself."
            if self.simulated
            else "The machine restarts now. Your SSH connection drops; the setup state is saved on disk."
        )
        body = Text.assemble(
            ("A reboot is needed\n\n", "bold"),
            ("Why: ", "bold"), part(f"{self.reason}\n\n"),
            ("What happens: ", "bold"), f"{what}\n\n",
            ("How to come back: ", "bold"), part(f"wait a minute or two, then\n    {self.come_back}\n"),
            "gpuwizard checks the machine again and continues where it stopped.",
        )  # fmt: skip
        with VerticalScroll(id="reboot-body"):
            yield Static(body)

    def action_reboot(self) -> None:
        self.answer(RebootNow())

    def action_later(self) -> None:
        self.answer(RebootLater())
