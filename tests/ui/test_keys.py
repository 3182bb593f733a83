"""The one key map on every stage view: ``?`` opens the help and Esc leaves it, and the footer
shows whole keys only, within 80 columns, and only those that act in the view's state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets._footer import FooterKey

from gpuwizard.screens.benchmark import BenchmarkView
from gpuwizard.screens.help import HelpScreen
from gpuwizard.screens.install import InstallView
from gpuwizard.screens.looking import LookingView
from gpuwizard.screens.reboot import RestartedView
from gpuwizard.screens.refused import RefusedView
from gpuwizard.screens.shell import StageView
from gpuwizard.screens.widgets.key_footer import fitting, key_width
from gpuwizard.setup.flow import Skip
from tests.ui.pilots import FakeMachine, ViewHarness, after, until
from tests.ui.test_benchmark import whole_run
from tests.ui.test_snapshots import FAILED_RUN, NOW, SCREENS, STARTED, installing

VIEWS: dict[str, Any] = {
    name: make
    for name, make in SCREENS.items()
    if name not in {"help", "secret", "quit-running"} and not name.startswith("doctor")
}
VIEWS |= {
    "looking": LookingView,
    "refused": lambda: RefusedView("this GPU needs a newer kernel", can_go_back=True),
    "refused-no-way-back": lambda: RefusedView("no NVIDIA GPU", can_go_back=False),
    "restart-question": lambda: RestartedView("2026-12-03 10:00 UTC"),
    "benchmark": lambda: BenchmarkView(whole_run(Path("/nonexistent")), "ResNet-50"),
    "install-running": lambda: InstallView(
        installing([STARTED, FAILED_RUN[1]], attach=True), FakeMachine(), now=lambda: NOW
    ),
}


class HelpHarness(ViewHarness):
    """The harness with the wizard's real help screen behind ``?``."""

    def action_help(self) -> None:
        self.push_screen(HelpScreen("/var/lib/gpuwizard", simulated=True))


async def settled(pilot: Any) -> StageView:
    await pilot.pause()
    return pilot.app.shell.view  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", list(VIEWS))
async def test_question_mark_opens_the_help_on_every_view_and_esc_leaves_it(name: str) -> None:
    app = HelpHarness(VIEWS[name]())
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.shell)
        assert app.answers == [], "Esc closed the help and answered nothing to the view"


def footer_keys(app: ViewHarness) -> list[FooterKey]:
    return list(app.shell.query(FooterKey))


@pytest.mark.parametrize("name", list(VIEWS))
async def test_no_footer_key_is_cut_at_80_columns(name: str) -> None:
    app = ViewHarness(VIEWS[name]())
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot)
        await pilot.pause(0.1)
        keys = footer_keys(app)
        assert keys, "the footer shows keys"
        for key in keys:
            region = key.region
            assert region.width == key_width(key.key_display, key.description), key.description
            assert region.right <= 80, f"{key.description!r} is cut at column 80"
        shown = {key.action for key in keys}
        assert {"app.help"} <= shown or "finish" in shown, "? help is always in the footer"


def test_the_footer_drops_the_least_important_keys_whole() -> None:
    from textual.binding import Binding

    keys = [
        (Binding("enter", "run_step", "Run step"), "⏎", 12),
        (Binding("d", "app.doctor", "Doctor"), "d", 10),
        (Binding("a", "run_all", "Run all"), "a", 11),
        (Binding("?", "app.help", "Help"), "?", 8),
        (Binding("q", "app.quit_wizard", "Quit"), "q", 8),
    ]
    assert fitting(keys, 80) == {0, 1, 2, 3, 4}
    assert fitting(keys, 40) == {0, 2, 3, 4}, "the doctor goes first; help and quit stay"
    assert fitting(keys, 28) == {0, 3, 4}


async def test_install_footer_shows_only_the_keys_that_act_in_each_mode() -> None:
    failed = InstallView(installing([STARTED, *FAILED_RUN]), FakeMachine(), now=lambda: NOW)
    app = ViewHarness(failed)
    async with app.run_test(size=(120, 40)) as pilot:
        await settled(pilot)
        await pilot.pause(0.1)
        actions = {key.action for key in footer_keys(app)}
        assert {"retry", "skip", "abort"} <= actions and "run_step" not in actions
        await pilot.press("s")  # a needed step: asked first
        assert not app.answers or not isinstance(app.answers[-1], Skip), "not before the answer"
        await pilot.press("y")  # the failure answered by a skip: waiting for a go-ahead again
        await until(pilot, lambda: bool(app.answers) and isinstance(app.answers[-1], Skip))
        failed.update(after(failed.stage, app.answers[-1]))  # type: ignore[arg-type]
        await until(pilot, lambda: "run_step" in {k.action for k in footer_keys(app)})
        assert "retry" not in {key.action for key in footer_keys(app)}


async def test_the_running_install_hides_every_deciding_key() -> None:
    running = VIEWS["install-running"]()
    app = ViewHarness(running)
    async with app.run_test(size=(120, 40)) as pilot:
        await settled(pilot)
        await pilot.pause(0.1)
        assert running.mode == "running"
        actions = {key.action for key in footer_keys(app)}
        assert actions.isdisjoint({"run_step", "run_all", "skip", "retry", "abort"}), actions


def test_one_key_never_has_two_meanings_in_the_bindings() -> None:
    """Across every stage view, a key that is bound means one thing (Enter: continue or run)."""
    meanings: dict[str, set[str]] = {}
    views = {type(make()) for make in VIEWS.values()}
    for view in views:
        for key, bindings in view._merged_bindings.key_to_bindings.items():  # type: ignore[union-attr]
            for binding in bindings:
                meanings.setdefault(key, set()).add(binding.description)
    assert meanings["b"] <= {"Back"}, meanings["b"]
    assert meanings["escape"] <= {"Back", "Later"}, meanings["escape"]
    assert meanings["q"] <= {"Quit"}, meanings["q"]
    assert meanings["question_mark"] == {"Help"}
    assert meanings["l"] == {"Wrap/scroll"} and meanings["f"] == {"Follow"}
