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

    def __init__(self, reason: str, come_back: str, simulated: bool, mok: bool = False) -> None:
        """``mok``: a Machine Owner Key waits to be enrolled at this boot (MokManager)."""
        super().__init__()
        self.reason = reason
        self.come_back = come_back
        self.simulated = simulated
        self.mok = mok

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
            *self.enrollment(),
            ("How to come back: ", "bold"), part(f"wait a minute or two, then\n    {self.come_back}\n"),
            "gpuwizard checks the machine again and continues where it stopped.",
        )  # fmt: skip
        with VerticalScroll(id="reboot-body"):
            yield Static(body)

    def enrollment(self) -> tuple[tuple[str, str] | str, ...]:
        """What the person does at the console for the MOK, when one waits to be enrolled."""
        if not self.mok:
            return ()
        at_console = (
            "the simulated console answers MokManager with the password you typed, as you would."
            if self.simulated
            else "the console (or the BMC's remote console) shows MokManager before Linux starts: "
            "choose 'Enroll MOK' and type the one-time password you chose. Over SSH alone it "
            "cannot be answered, and without the key Secure Boot refuses the driver's module."
        )
        return (("Secure Boot key (MOK): ", "bold yellow"), f"{at_console}\n\n")

    def action_reboot(self) -> None:
        self.answer(RebootNow())

    def action_later(self) -> None:
        self.answer(RebootLater())
