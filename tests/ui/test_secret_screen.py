"""The MOK password prompt (issue 14): typed twice, checked against mokutil's rules before it
leaves, and it says the key is enrolled at the console on the next boot (serial consoles named).
Other secrets keep the one-field prompt."""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.widgets import Input, Static

from gpuwizard.screens.modals import SecretScreen
from gpuwizard.steps.enroll_mok import MOK_PASSWORD
from tests.ui.test_hostile_text import shown_text

GOOD = "Mok-pass-4242"


class Asker(App[None]):
    """Pushes one secret prompt and keeps what it was dismissed with."""

    def __init__(self, screen: SecretScreen) -> None:
        super().__init__()
        self.prompt = screen
        self.results: list[str | None] = []

    async def on_mount(self) -> None:
        await self.push_screen(self.prompt, self.results.append)


async def type_into(pilot: Any, selector: str, text: str) -> None:
    pilot.app.screen.query_one(selector, Input).focus()
    await pilot.press(*text, "enter")
    await pilot.pause()


def error_shown(app: Asker) -> str:
    return str(app.prompt.query_one("#secret-error").render())


async def test_the_mok_prompt_sends_only_two_equal_passwords_that_mokutil_takes() -> None:
    app = Asker(SecretScreen(MOK_PASSWORD.prompt, MOK_PASSWORD.name))
    async with app.run_test(size=(120, 50)) as pilot:
        await type_into(pilot, "#secret", GOOD)
        assert app.screen.focused is app.screen.query_one("#secret-again"), (
            "on to the confirm field"
        )
        await type_into(pilot, "#secret-again", GOOD + "x")
        assert app.results == [] and "the two passwords differ" in error_shown(app)
        assert app.screen.query_one("#secret", Input).value == "", "no copy left in the widget"

        await type_into(pilot, "#secret", "")
        await type_into(pilot, "#secret-again", "")
        assert app.results == [] and "the MOK password is empty" in error_shown(app)

        await type_into(pilot, "#secret", GOOD)
        await type_into(pilot, "#secret-again", GOOD)
        assert app.results == [GOOD]


async def test_the_mok_prompt_says_the_rules_and_that_the_console_is_needed_next_boot() -> None:
    app = Asker(SecretScreen(MOK_PASSWORD.prompt, MOK_PASSWORD.name))
    async with app.run_test(size=(120, 60)) as pilot:
        await pilot.pause()
        text = " ".join(str(static.render()) for static in app.screen.query(Static))
        assert "Enroll MOK" in shown_text(app.export_screenshot()), "on screen, not only mounted"
    assert "1-256 characters (mokutil's limits), printable ASCII only" in text
    assert "MokManager shows a blue screen on the console" in text
    for console in ("AWS EC2 Serial Console", "Azure Serial Console", "Google Cloud's interactive serial console"):  # fmt: skip
        assert console in text


async def test_another_secret_keeps_one_field_and_is_sent_as_typed() -> None:
    app = Asker(SecretScreen("Token for the private index", "index-token"))
    async with app.run_test() as pilot:
        assert not app.screen.query("#secret-again")
        await type_into(pilot, "#secret", "t0ken")
        assert app.results == ["t0ken"]


async def test_a_key_the_mok_password_cannot_hold_is_refused_as_it_is_typed() -> None:
    """Non-ASCII (MokManager keeps one byte per key) never reaches the field, and the prompt
    says why at once, not after the password was typed twice."""
    app = Asker(SecretScreen(MOK_PASSWORD.prompt, MOK_PASSWORD.name))
    async with app.run_test(size=(120, 50)) as pilot:
        app.screen.query_one("#secret", Input).focus()
        await pilot.press(*"Mok-pass", "é")
        await pilot.pause()
        assert app.screen.query_one("#secret", Input).value == "Mok-pass", "the é was refused"
        assert "printable ASCII only" in error_shown(app)
        await pilot.press(*"-4242", "enter")
        await pilot.pause()
        assert app.screen.focused is app.screen.query_one("#secret-again")
        await type_into(pilot, "#secret-again", "Mok-pass-4242")
        assert app.results == ["Mok-pass-4242"]


async def test_an_empty_mok_password_is_refused_at_the_first_enter() -> None:
    app = Asker(SecretScreen(MOK_PASSWORD.prompt, MOK_PASSWORD.name))
    async with app.run_test(size=(120, 50)) as pilot:
        await type_into(pilot, "#secret", "")
        assert "the MOK password is empty" in error_shown(app)
        assert app.screen.focused is app.screen.query_one("#secret"), "not on to the confirm field"
