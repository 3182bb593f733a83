"""Small dialogs: a secret prompt with masked input, a word to find, "quit while a step runs", and
a yes-or-no question (files that would be replaced)."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from gpuwizard.screens.plain import plain
from gpuwizard.steps.enroll_mok import (
    MOK_CONSOLE,
    MOK_PASSWORD,
    MOK_PASSWORD_MAX,
    MOK_PASSWORD_RULES,
    mok_password_problem,
)

REFUSED_KEY = (
    "that key is not taken: the MOK password is printable ASCII only (letters, digits, "
    f"punctuation, space), at most {MOK_PASSWORD_MAX} characters; MokManager keeps only the low "
    "byte of each key typed at the console"
)


class MokPasswordInput(Input):
    """A masked field that takes only what mokutil and MokManager can take: a key outside
    printable ASCII, or past the length limit, is refused as it is typed (or pasted)."""

    class Refused(Message):
        """A key or a paste was refused (the value is unchanged)."""

    def __init__(self, *, id: str, placeholder: str = "") -> None:
        super().__init__(
            placeholder=placeholder,
            password=True,
            restrict=r"[ -~]*",
            max_length=MOK_PASSWORD_MAX,
            id=id,
        )

    def restricted(self) -> None:
        self.post_message(self.Refused())


class SecretScreen(ModalScreen[str | None]):
    """Masked input; the value goes to the runner's socket and nowhere else (never logged).

    The MOK password (``name`` mok-password) is typed twice and checked against mokutil's rules
    before it leaves (a key it cannot hold is refused as it is typed, an empty one at the first
    Enter), and the screen says where it is needed next: at the console, at the next boot
    (MokManager), which over SSH alone nobody sees.
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    SecretScreen { align: center middle; }
    SecretScreen > Vertical { width: 70; height: auto; border: thick $warning; padding: 1 2; background: $surface; }
    SecretScreen Input { margin-top: 1; }
    SecretScreen #secret-error { color: $error; }
    """

    def __init__(self, prompt: str, name: str | None = None) -> None:
        super().__init__()
        self.prompt = prompt
        self.mok = name == MOK_PASSWORD.name

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(plain(self.prompt))
            keys = Static("Enter to send · Esc: cancel the step (asks first)", classes="dim")
            if self.mok:  # the keys before the long console note: seen at 80x24
                yield Static(plain(f"Rules: {MOK_PASSWORD_RULES}.", "dim"))
                yield MokPasswordInput(id="secret")
                yield MokPasswordInput(id="secret-again", placeholder="the same again")
                yield Static("", id="secret-error")
                yield keys
                yield Static(plain(f"\n{MOK_CONSOLE}"))
            else:
                yield Input(password=True, id="secret")
                yield keys

    @on(MokPasswordInput.Refused)
    def refuse_key(self) -> None:
        self.query_one("#secret-error", Static).update(plain(REFUSED_KEY))

    @on(Input.Submitted, "#secret")
    def submit(self, event: Input.Submitted) -> None:
        if self.mok:
            problem = mok_password_problem(event.value)
            said = "Now the same again, to confirm" if problem is None else problem
            self.query_one("#secret-error", Static).update(plain(said))
            if problem is None:
                self.query_one("#secret-again", Input).focus()
            return
        value = event.value
        event.input.value = ""  # drop the widget's copy at once
        self.dismiss(value)

    @on(Input.Submitted, "#secret-again")
    def submit_again(self) -> None:
        first, again = self.query_one("#secret", Input), self.query_one("#secret-again", Input)
        value, problem = first.value, mok_password_problem(first.value)
        if problem is None and again.value != value:
            problem = "the two passwords differ"
        first.value = again.value = ""  # drop the widgets' copies at once, sent or not
        if problem is not None:
            self.query_one("#secret-error", Static).update(plain(f"{problem}; type it again"))
            first.focus()
            return
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

    def __init__(self, running: bool, paused: bool = False, command: str = "gpuwizard") -> None:
        """``running``: a step runs now; ``paused``: a run waits between steps for a go-ahead;
        ``command``: what to run again (``gpuwizard --simulate PROFILE`` on a simulated host)."""
        super().__init__()
        self.running = running
        self.paused = paused
        self.command = command

    def compose(self) -> ComposeResult:
        if self.running:
            text = (
                "A step is running. It continues in the background: closing this window or losing "
                f"the SSH connection does not stop it.\n\nRun `{self.command}` again to follow it and "
                "continue."
            )
        elif self.paused:
            text = (
                "The install is paused between steps: nothing runs now, and the finished steps "
                f"stay done.\n\nRun `{self.command}` again to continue with the next step."
            )
        else:
            text = f"Nothing is running. Run `{self.command}` again to continue where you left off."
        with Vertical():
            yield Static(text)
            yield Static("\nq quit · Esc stay")

    def action_leave(self) -> None:
        self.dismiss(True)

    def action_stay(self) -> None:
        self.dismiss(False)


class ConfirmScreen(ModalScreen[bool]):
    """A question answered with y (do it) or n / Esc (leave things as they are)."""

    BINDINGS = [Binding("y", "yes", "Yes"), Binding("n,escape", "no", "No")]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical { width: 70; height: auto; border: thick $warning; padding: 1 2; background: $surface; }
    """

    def __init__(self, question: str, yes: str, no: str) -> None:
        """``yes`` and ``no``: what each answer does, in a few words."""
        super().__init__()
        self.question = question
        self.yes = yes
        self.no = no

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(plain(self.question))
            yield Static(plain(f"\ny {self.yes} · n or Esc {self.no}"))

    def action_yes(self) -> None:
        self.dismiss(True)

    def action_no(self) -> None:
        self.dismiss(False)
