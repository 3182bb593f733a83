"""Reboot "Later" goes back to the install, where the reboot waits: Enter shows the reboot screen
again (through the state machine, from the disk), and only the keys that act are offered."""

from __future__ import annotations

from textual.widgets._footer import FooterKey

from gpuwizard.screens.install import InstallView
from gpuwizard.screens.reboot import RebootView
from gpuwizard.setup.flow import CheckDisk, RebootLater, RunStep, next_stage
from tests.ui.pilots import FakeMachine, ViewHarness, until
from tests.ui.test_snapshots import BEFORE_REBOOT, NOW, installing


async def test_esc_on_the_reboot_screen_answers_later_and_never_quits() -> None:
    app = ViewHarness(RebootView("the driver loads at boot", "ssh me@gpu   then   gpuwizard", True))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("escape")
        await until(pilot, lambda: app.answers == [RebootLater()])
        assert app.is_running


async def test_the_install_with_a_reboot_pending_says_so_and_enter_leads_to_the_reboot() -> None:
    view = InstallView(installing(BEFORE_REBOOT), FakeMachine(), now=lambda: NOW)
    app = ViewHarness(view)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.1)
        assert view.stage.reboot_pending and view.quit_state is None
        details = str(view.query_one("#details").render())
        assert "A reboot is pending" in details and "the driver loads at boot" in details
        actions = {key.action for key in app.shell.query(FooterKey)}
        assert "run_step" in actions and actions.isdisjoint({"run_all", "skip", "retry"})
        await pilot.press("enter")
        await until(pilot, lambda: len(app.answers) == 1)
        assert app.answers == [RunStep()]
        _, effects = next_stage(view.stage, RunStep())
        assert effects == (CheckDisk(),), (
            "no runner is started while the reboot waits: the disk leads"
        )
