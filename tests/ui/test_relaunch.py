"""The wizard opened again over the same state, as a person does after a reboot, an SSH drop or
a quit: each launch is a new app (and, in tmux, a new process) that must land where the run
really is, never on a reboot that already happened."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from gpuwizard.frontends.app import GpuWizardApp
from gpuwizard.runner.journal import Journal
from gpuwizard.runner.layout import JOURNAL
from gpuwizard.screens.benchmark import BenchmarkView
from gpuwizard.screens.choose import ChooseView
from gpuwizard.screens.export import ExportView
from gpuwizard.screens.install import InstallView
from gpuwizard.screens.machine import MachineView
from gpuwizard.screens.reboot import RebootView
from gpuwizard.screens.resume import ResumeView
from gpuwizard.screens.review import ReviewView
from gpuwizard.screens.shell import StageView
from gpuwizard.screens.verify import VerifyView
from gpuwizard.sim.backend import sim_backend
from gpuwizard.sim.sandbox import place_for
from tests.cli.helpers import gpuwizard
from tests.ui.pilots import shows, until, view_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
PROFILE = "h100x8-ubuntu2204-fresh"


class ViewLog:
    """Every stage view the app showed, in order (one shown for a moment counts too)."""

    def __init__(self) -> None:
        self.shown: list[type] = []

    def hook(self, message: object) -> None:
        view = getattr(message, "_sender", None)
        if type(message).__name__ == "Mount" and isinstance(view, StageView):
            self.shown.append(type(view))


def journal(home: Path) -> Journal:
    return Journal.load(place_for(PROFILE, home / "gpuwizard").state_dir / JOURNAL)


async def settle(pilot: Pilot[object]) -> None:
    """Let the screen's follower replay the run's whole history."""
    await pilot.pause(1.0)


async def test_after_a_reboot_every_launch_resumes_and_none_offers_the_reboot_again(
    home: Path,
) -> None:
    assert gpuwizard(home, "--simulate", PROFILE, "apply", "--yes").returncode == 10
    waited = [r.id for r in journal(home).data.steps if r.state == "awaiting_reboot"]
    assert waited, "the run stopped for a reboot with steps waiting for it"
    for launch in range(3):
        log = ViewLog()
        app = GpuWizardApp(sim_backend(PROFILE, home=home / "gpuwizard"))
        async with app.run_test(size=(100, 32), message_hook=log.hook) as pilot:
            if launch == 0:
                await until(pilot, shows(pilot, ResumeView))
                await until(pilot, lambda: view_of(pilot).done)  # type: ignore[attr-defined]
                titles = {s.id: s.title for s in journal(home).data.plan.steps}
                checked = [title for title, _, _ in view_of(pilot).checked]  # type: ignore[attr-defined]
                assert checked == [titles[step] for step in waited]
                await pilot.press("enter")
            await until(pilot, shows(pilot, InstallView))
            await settle(pilot)
            assert isinstance(view_of(pilot), InstallView), log.shown
            expected = next(r.id for r in journal(home).data.steps if r.state == "pending")
            assert view_of(pilot).current == expected  # type: ignore[attr-defined]
            await pilot.press("q")
        assert RebootView not in log.shown, f"launch {launch + 1}: {log.shown}"


async def test_opened_again_on_a_set_up_machine_the_export_is_the_setup_that_ran(
    home: Path,
) -> None:
    """Restored from e86b840, where it was dropped because its first Enter was lost in CI."""
    for _ in range(2):  # gpuwizard apply --yes: install, reboot, finish
        gpuwizard(home, "--simulate", "t4-debian12-fresh", "apply", "--yes")
    app = GpuWizardApp(sim_backend("t4-debian12-fresh", home=home / "gpuwizard"))
    async with app.run_test(size=(100, 32)) as pilot:
        steps = (
            (MachineView, "enter"),
            (ChooseView, "c"),
            (ReviewView, "s"),
            (InstallView, "a"),
            (VerifyView, "enter"),
            (BenchmarkView, "s"),
        )
        for screen, key in steps:
            await until(pilot, shows(pilot, screen))
            await pilot.press(key)
        await until(pilot, shows(pilot, ExportView))
        screen = view_of(pilot)
        assert screen.note and "earlier run" in screen.note  # type: ignore[attr-defined]
        files = screen.render_format("script")  # type: ignore[attr-defined]
        assert "install-nvidia-driver" in files[0].content, "the plan that set the machine up"


async def test_runners_that_die_at_every_start_end_the_wizard_with_their_last_words(
    home: Path,
) -> None:
    """Issue 31 (5): after the reboot every runner dies at its second state write. Each Enter
    on the failed check starts one more; the third death ends the wizard (exit 1), saying why."""
    import dataclasses

    from gpuwizard.runner.failpoints import ENV as FAILPOINTS
    from gpuwizard.screens.refused import RefusedView

    assert gpuwizard(home, "--simulate", PROFILE, "apply", "--yes").returncode == 10
    backend = sim_backend(PROFILE, home=home / "gpuwizard")
    dying = {**backend.env, FAILPOINTS: "state.after_tmp_write=kill@2"}
    app = GpuWizardApp(dataclasses.replace(backend, env=dying))
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(2):
            await until(pilot, lambda: shows(pilot, ResumeView)() and view_of(pilot).done)  # type: ignore[attr-defined]
            assert "failpoint state.after_tmp_write hit 2" in (view_of(pilot).stage.problem or "")  # type: ignore[attr-defined]
            await pilot.press("enter")  # on: the check starts again
        await until(pilot, shows(pilot, RefusedView))
        assert "3 times in a row" in view_of(pilot).why
        await pilot.press("enter")
        await until(pilot, lambda: not app.is_running)
    assert app.return_code == 1


async def test_a_relaunch_after_the_install_offers_verify_benchmark_and_export_again(
    home: Path,
) -> None:
    """Issue 31 (3): after the install, a relaunch (the terminal killed during Verify or the
    benchmark) lands on the machine view, which says the setup is done and offers verify,
    benchmark and export again, never an empty review of "0 steps"; a benchmark that was cut
    off is said to be interrupted, with what it had measured."""
    from gpuwizard.screens.machine import MachineView

    profile = "a100x4-ubuntu2004-fresh"
    codes = [gpuwizard(home, "--simulate", profile, "apply", "--yes").returncode for _ in range(3)]
    assert codes == [10, 10, 0], "a kernel upgrade, then the driver: two reboots, then done"
    state = place_for(profile, home / "gpuwizard").state_dir
    cut_off = state / "bench" / "20261204-223100"  # the stream of a run whose terminal closed
    cut_off.mkdir(parents=True)
    (cut_off / "stream.jsonl").write_text(
        '{"v":1,"kind":"result","mode":"amp-bf16","world_size":1,"batch_size":256,"images_per_s":2950.0,'
        '"per_gpu":2950.0,"step_ms":86.8,"samples":30,"memory_mib":30000}\n{"kind":"res'
    )
    for key, view in (("v", VerifyView), ("m", BenchmarkView), ("e", ExportView)):
        app = GpuWizardApp(sim_backend(profile, home=home / "gpuwizard"))
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, shows(pilot, MachineView))
            banner = str(view_of(pilot).query_one("#set-up").render())
            assert "gpuwizard has set this machine up" in banner, banner
            await pilot.press(key)
            await until(pilot, shows(pilot, view))
            if view is BenchmarkView:
                about = view_of(pilot).about
                assert "The last benchmark (started 2026-12-04 22:31) was interrupted" in about
                assert "amp-bf16 on 1 GPU 2,950 img/s" in about
            await pilot.press("q")
    assert ReviewView  # never reached: no plan of "0 steps" is offered after a finished run
