"""RebootView: why a reboot is needed, what happens, and how to come back; RestartedView:
whether it happened, asked where no boot signal can tell."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from gpuwizard.screens.plain import part
from gpuwizard.screens.shell import StageView
from gpuwizard.setup.flow import RebootAnswered, RebootLater, RebootNow


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


class RestartedView(StageView):
    """Neither the boot_id nor /proc/stat's btime can tell whether the reboot happened: asks the
    person. Answers RebootAnswered; what follows (the check, or the reboot again) is the flow's."""

    BINDINGS = [
        Binding("enter", "answer_highlighted", "Answer", priority=True),
    ]
    DEFAULT_CSS = """
    RestartedView #restart-body { padding: 1 2; height: auto; }
    RestartedView #restart-choices { margin: 0 2; height: auto; }
    """

    def __init__(self, since: str) -> None:
        super().__init__()
        self.since = since

    def compose(self) -> ComposeResult:
        body = Text.assemble(
            (f"Did this machine restart since {self.since}?\n\n", "bold"),
            part(
                f"gpuwizard asked for a reboot at {self.since}, and this machine shows neither a "
                "boot_id (/proc/sys/kernel/random/boot_id) nor a boot time (/proc/stat) to tell "
                "whether it happened. `uptime` or `who -b` says when it last started. Your answer "
                "is kept in the setup's journal; after a yes the steps that waited for the reboot "
                "are checked, after a no the reboot is asked for again."
            ),
        )
        yield Static(body, id="restart-body")
        yield OptionList(
            Option(f"Yes: it restarted after {self.since}", id="yes"),
            Option("No: it has not restarted since then", id="no"),
            id="restart-choices",
        )

    def action_answer_highlighted(self) -> None:
        choices = self.query_one("#restart-choices", OptionList)
        if choices.highlighted is None:
            return
        chosen = choices.get_option_at_index(choices.highlighted).id
        self.answer(RebootAnswered(chosen == "yes"))
