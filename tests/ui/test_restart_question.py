"""Neither the boot_id nor /proc/stat's btime readable: the TUI asks "Did this machine restart
since <time>?" (issue 14). The answer goes to the runner's check, which keeps it in the journal;
a relaunch after it never asks again for the same reboot."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gpuwizard.frontends.app import GpuWizardApp
from gpuwizard.runner import events as ev
from gpuwizard.runner.events import StopReason
from gpuwizard.screens.install import InstallView
from gpuwizard.screens.reboot import RestartedView
from gpuwizard.screens.resume import ResumeView
from gpuwizard.setup import flow
from gpuwizard.setup.flow import RebootAnswered, RunMode
from gpuwizard.sim.backend import sim_backend
from gpuwizard.sim.sandbox import create, place_for
from tests.cli.helpers import gpuwizard
from tests.ui.pilots import ViewHarness, run_of, shows, until, view_of
from tests.ui.test_hostile_text import shown_text
from tests.ui.test_relaunch import ViewLog, journal, settle
from tests.ui.test_snapshots import planned

PROFILE = "h100x8-ubuntu2204-fresh"
SINCE = "2026-12-03 10:00 UTC"


@pytest.mark.parametrize(("keys", "said"), [(("enter",), True), (("down", "enter"), False)])
async def test_the_question_names_the_time_and_enter_answers_the_highlighted_choice(
    keys: tuple[str, ...], said: bool
) -> None:
    app = ViewHarness(RestartedView(SINCE))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        shown = str(app.shell.view.query_one("#restart-body").render())
        assert f"Did this machine restart since {SINCE}?" in shown
        assert "uptime" in shown and "journal" in shown
        for key in keys:
            await pilot.press(key)
        await until(pilot, lambda: app.answers == [RebootAnswered(said)])


@pytest.mark.parametrize("said", [True, False, None])
async def test_the_resume_check_carries_the_answer_to_the_runner(said: bool | None) -> None:
    selection, plan = planned()
    resuming, effects = flow.entered(flow.Resuming(plan, selection, rebooted=said))
    assert effects == (flow.Launch(RunMode.CHECK, said),), "the check starts, with the answer"
    checked = [ev.RunStarted("run-1", 1, None, ()), ev.RunStopped(StopReason.PAUSED, "checked")]
    assert isinstance(resuming, flow.Resuming)
    view = ResumeView(replace(resuming, run=run_of(checked), checked=True))
    app = ViewHarness(view)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: view.done)
        shown = shown_text(app.export_screenshot())
        if said is False:
            assert "You said the machine has not restarted: the reboot is offered" in shown


def hide_boot_signals(home: Path) -> None:
    """A machine whose boot_id and /proc/stat cannot be read (a locked-down container)."""
    sandbox = create(place_for(PROFILE, home / "gpuwizard"), {"boot_id_hidden": True})
    sandbox.path("/proc/stat").unlink(missing_ok=True)


@pytest.mark.slow
@pytest.mark.timeout(240)
async def test_asked_answered_yes_checked_and_a_relaunch_goes_on_without_asking(
    home: Path,
) -> None:
    hide_boot_signals(home)
    first = gpuwizard(home, "--simulate", PROFILE, "apply", "--yes")
    assert first.returncode == 10, first.stdout + first.stderr  # the simulated machine rebooted
    backend = sim_backend(PROFILE, home=home / "gpuwizard")

    async with GpuWizardApp(backend).run_test(size=(100, 32)) as pilot:
        await until(pilot, shows(pilot, RestartedView))
        await pilot.press("enter")  # "Yes: it restarted"
        await until(pilot, shows(pilot, ResumeView))
        await until(pilot, lambda: view_of(pilot).done)  # type: ignore[attr-defined]
        assert {state for _, state, _ in view_of(pilot).checked} == {"done"}  # type: ignore[attr-defined]
        await pilot.press("q")

    [answer] = journal(home).data.boot_answers
    assert (answer.rebooted, answer.front_end) == (True, "tui")
    log = ViewLog()
    async with GpuWizardApp(backend).run_test(size=(100, 32), message_hook=log.hook) as pilot:
        await until(pilot, shows(pilot, InstallView))
        await settle(pilot)
        await pilot.press("q")
    assert RestartedView not in log.shown and ResumeView not in log.shown, log.shown
