"""Quit asks while a run is paused between steps, by the q key and by the command palette's Quit
alike; Esc stays, q leaves (the run stays on disk for the next gpuwizard)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwizard.frontends.app import GpuWizardApp
from gpuwizard.screens.choose import ChooseView
from gpuwizard.screens.install import InstallView
from gpuwizard.screens.machine import MachineView
from gpuwizard.screens.modals import QuitScreen
from gpuwizard.screens.review import ReviewView
from gpuwizard.sim.backend import sim_backend
from tests.ui.pilots import shows, until, view_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


async def test_quit_asks_while_the_install_is_paused_from_the_key_and_the_palette(
    home: Path,
) -> None:
    app = GpuWizardApp(sim_backend("h100x8-ubuntu2204-fresh", home=home / "gpuwizard"))
    async with app.run_test(size=(100, 32)) as pilot:
        await until(pilot, shows(pilot, MachineView))
        await pilot.press("q")  # nothing runs: it leaves at once
        await until(pilot, lambda: not app.is_running)
    app = GpuWizardApp(sim_backend("h100x8-ubuntu2204-fresh", home=home / "gpuwizard"))
    async with app.run_test(size=(100, 32)) as pilot:
        await until(pilot, shows(pilot, MachineView))
        await pilot.press("enter")
        await until(pilot, shows(pilot, ChooseView))
        await pilot.press("c")
        await until(pilot, shows(pilot, ReviewView))
        await pilot.press("enter")
        await until(pilot, shows(pilot, InstallView))
        await pilot.press("enter")  # one step, then the run pauses for the next go-ahead
        await until(
            pilot,
            lambda: (
                view_of(pilot).mode == "waiting" and view_of(pilot).stage.run.run_id is not None
            ),
        )
        assert view_of(pilot).quit_state == "paused"
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, QuitScreen))
        assert app.screen.paused  # type: ignore[attr-defined]
        # the way back names the simulated server: `gpuwizard` alone would open another machine
        assert app.screen.command == "gpuwizard --simulate h100x8-ubuntu2204-fresh"  # type: ignore[attr-defined]
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.shell)
        await app.run_action("quit")  # what the command palette's Quit runs
        await until(pilot, lambda: isinstance(app.screen, QuitScreen))
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running)
    assert app.exit_code == 0
