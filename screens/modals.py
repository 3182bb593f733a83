"""Small dialogs: a secret prompt with masked input, a word to find, and "quit while a step runs"."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from gpuwizard.screens.plain import plain


class SecretScreen(ModalScreen[str | None]):
    """Masked input; the value goes to the runner's socket and nowhere else (never logged)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    SecretScreen { align: center middle; }
    SecretScreen > Vertical { width: 70; height: auto; border: thick $warning; padding: 1 2; background: $surface; }
    SecretScreen Input { margin-top: 1; }
    """

    def __init__(self, prompt: str) -> None:
        super().__init__()
        self.prompt = prompt

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(plain(self.prompt))
            yield Input(password=True, id="secret")
            yield Static(
                "Enter to send · Esc to cancel (the step then fails and can be retried)",
                classes="dim",
            )

    @on(Input.Submitted, "#secret")
    def submit(self, event: Input.Submitted) -> None:
        value = event.value
        event.input.value = ""  # drop the widget's copy at once
        self.dismiss(value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class SearchScreen(ModalScreen[str | None]):
    """The word to find in the log (Enter finds it, Esc cancels)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    SearchScreen { align: center bottom; }
    SearchScreen > Vertical { width: 70; height: auto; border: thick $primary; padding: 0 1; background: $surface; }
    """

    def __init__(self, last: str = "") -> None:
        super().__init__()
        self.last = last

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Find in the log (Enter finds · n finds the next · Esc cancels)")
            yield Input(value=self.last, id="term")

    @on(Input.Submitted, "#term")
    def submit(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class QuitScreen(ModalScreen[bool]):
    BINDINGS = [Binding("q", "leave", "Quit"), Binding("escape", "stay", "Stay")]
    DEFAULT_CSS = """
    QuitScreen { align: center middle; }
    QuitScreen > Vertical { width: 70; height: auto; border: thick $primary; padding: 1 2; background: $surface; }
    """

    def __init__(self, running: bool, paused: bool = False) -> None:
        """``running``: a step runs now; ``paused``: a run waits between steps for a go-ahead."""
        super().__init__()
        self.running = running
        self.paused = paused

    def compose(self) -> ComposeResult:
        if self.running:
            text = (
                "A step is running. It continues in the background: closing this window or losing "
                "the SSH connection does not stop it.\n\nRun `gpuwizard` again to follow it and "
                "continue."
            )
        elif self.paused:
            text = (
                "The install is paused between steps: nothing runs now, and the finished steps "
                "stay done.\n\nRun `gpuwizard` again to continue with the next step."
            )
        else:
            text = "Nothing is running. Run `gpuwizard` again to continue where you left off."
        with Vertical():
            yield Static(text)
            yield Static("\nq quit · Esc stay")

    def action_leave(self) -> None:
        self.dismiss(True)

    def action_stay(self) -> None:
        self.dismiss(False)
