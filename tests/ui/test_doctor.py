"""The doctor in the TUI: `d` opens it over any stage, and known errors show on the Step screen,
live while a step runs and with specifics when it fails."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.app import App
from textual.widgets import Static

from gpuwizard.doctor.findings import Finding, Report
from gpuwizard.frontends.app import GpuWizardApp
from gpuwizard.runner import events as ev
from gpuwizard.screens.choose import ChooseView
from gpuwizard.screens.doctor import DoctorScreen
from gpuwizard.screens.install import InstallView
from gpuwizard.screens.machine import MachineView
from gpuwizard.screens.review import ReviewView
from gpuwizard.sim.backend import sim_backend
from tests.ui.pilots import FakeMachine, ViewHarness, shows, until, view_of
from tests.ui.test_snapshots import installing

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def body(app: App[Any]) -> str:
    """The Doctor screen's text, as a terminal 100 columns wide shows it."""
    console = Console(width=100, record=True, file=io.StringIO())
    console.print(app.screen.query_one("#doctor-body", Static).content)
    return console.export_text()


async def test_d_opens_the_doctor_over_the_stage_and_esc_returns(home: Path) -> None:
    app = GpuWizardApp(sim_backend("a100x8-ubuntu2204-neglected", home=home / "gpuwizard"))
    async with app.run_test(size=(110, 36)) as pilot:
        await until(pilot, shows(pilot, MachineView))
        await pilot.press("d")
        await until(pilot, lambda: isinstance(pilot.app.screen, DoctorScreen))
        doctor = pilot.app.screen
        await until(pilot, lambda: doctor.report is not None)  # type: ignore[attr-defined]
        shown = body(pilot.app)
        assert "7 problems" in shown and "No nvidia module for 5.15.0-126-generic" in shown
        await pilot.press("escape")
        await until(pilot, shows(pilot, MachineView))


async def test_the_doctor_says_when_it_could_not_finish() -> None:
    def broken() -> Report:
        raise PermissionError("[Errno 13] Permission denied: '/proc/modules'")

    app = ViewHarness(DoctorScreen(broken))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert "could not finish: [Errno 13] Permission denied" in body(pilot.app)


async def test_check_again_runs_the_doctor_once_more() -> None:
    answers = iter([Report((Finding("driver", "warn", "No NVIDIA driver yet", "None yet."),)),
                    Report((Finding("driver", "ok", "Driver 580.95.05 (CUDA 13.0)", "Fine."),))])  # fmt: skip
    app = ViewHarness(DoctorScreen(lambda: next(answers)))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert "No NVIDIA driver yet" in body(pilot.app)
        await pilot.press("r")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert "Driver 580.95.05" in body(pilot.app)


async def test_a_known_error_shows_while_the_step_still_runs() -> None:
    running = [
        ev.StepStarted("install-nvidia-driver", "Install the NVIDIA driver", 1),
        ev.LogLines("install-nvidia-driver", ("Setting up nvidia-kernel-common-580-server ...",
                                              "modprobe: ERROR: could not insert 'nvidia': Key was rejected by service")),
    ]  # fmt: skip
    stage = installing([ev.RunStarted("run-1", 1, None, ()), *running], attach=True)
    app = ViewHarness(InstallView(stage, FakeMachine()))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.shell.view
        await until(pilot, lambda: screen.hint.key[0] == "known")  # type: ignore[attr-defined]
        hint = str(screen.query_one("#hint").render())
        assert screen.mode == "running"  # type: ignore[attr-defined]
        assert "⚠ in the log: Secure Boot refused to load the nvidia module" in hint
        assert "Enroll the MOK key" in hint


async def test_a_failing_dkms_build_shows_its_make_log_and_fix_on_the_step_screen(
    home: Path,
) -> None:
    backend = sim_backend("h100x8-ubuntu2204-fresh", home=home / "gpuwizard")
    (backend.state_dir.parent / "sandbox" / "scenario.json").write_text(
        json.dumps({"dkms_fails": True})
    )
    app = GpuWizardApp(backend)
    async with app.run_test(size=(100, 32)) as pilot:
        await until(pilot, shows(pilot, MachineView))
        await pilot.press("enter")
        await until(pilot, shows(pilot, ChooseView))
        await pilot.press("c")
        await until(pilot, shows(pilot, ReviewView))
        await pilot.press("s")
        await until(pilot, shows(pilot, InstallView))
        screen = view_of(pilot)
        await pilot.press("a")
        await until(pilot, lambda: screen.mode == "failed")
        assert screen.stage.run.ending.step == "install-nvidia-driver"
        hint = str(screen.query_one("#hint").render())
        assert "did not build for kernel 5.15.0-126-generic" in hint
        # the release the simulated archive installs: the table's newest of the branch
        assert re.search(r"Read the end of /var/lib/dkms/nvidia/580\.[0-9.]+/build/make\.log", hint)
