"""What the wizard builds for a stage, on a simulated machine and on one that is not: the Done
view's driver line and its "Next" commands, the benchmark run again, the export's folder check,
and the Machine view of a host with no NVIDIA GPU."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpuwizard.core.facts import HostFacts, NvmlOk
from gpuwizard.core.request import SetupRequest
from gpuwizard.frontends.stageviews import files_in, installed_driver, view_for
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.planner import plan_for
from gpuwizard.recommend.result import Recommendation
from gpuwizard.recommend.sizing import assess
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import target_from_facts
from gpuwizard.runner.control import Backend
from gpuwizard.screens.benchmark import BenchmarkView
from gpuwizard.screens.done import DoneView, InstalledDriver
from gpuwizard.screens.machine import MachineView
from gpuwizard.setup import flow
from gpuwizard.setup.effects import Effects
from gpuwizard.sim.backend import sim_backend
from tests.conftest import facts_of
from tests.ui.pilots import ViewHarness
from tests.ui.test_hostile_text import shown_text

PROFILE = "t4-debian12-fresh"
TABLE = load_table()


@pytest.fixture
def simulated(tmp_path: Path) -> Backend:
    return sim_backend(PROFILE, home=tmp_path / "gpuwizard")


@pytest.fixture
def real(simulated: Backend) -> Backend:
    """This machine as the real front end sees it: nothing on the command line chooses it."""
    return dataclasses.replace(simulated, name="this machine", simulated=False, cli_args=())


def set_up(loaded: str) -> tuple[flow.Done, HostFacts]:
    """The t4 plan done, the machine reporting driver ``loaded`` at the end."""
    facts = facts_of(PROFILE)
    result = recommend(TABLE, target_from_facts(facts, TABLE), SetupRequest())
    assert isinstance(result, Recommendation)
    selection, plan = plan_for(facts, result, SetupRequest(), TABLE)
    after = dataclasses.replace(
        facts, boot=dataclasses.replace(facts.boot, nvml=NvmlOk(loaded, "13.0", (), ()))
    )
    return flow.Done(plan, selection, facts=after), after


async def done_text(view: DoneView) -> str:
    app = ViewHarness(view)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        return shown_text(app.export_screenshot())


async def test_a_simulated_run_suggests_commands_on_the_same_simulated_server(simulated: Backend) -> None:  # fmt: skip
    stage, _ = set_up("580.178.04")
    view = view_for(stage, Effects(simulated), "ssh admin@t4")
    assert isinstance(view, DoneView)
    text = await done_text(view)
    for command in ("detect", "bench", "export"):
        assert f"gpuwizard --simulate {PROFILE} {command}" in text
    assert "source /opt/gpuwizard/envs/pytorch/bin/activate" not in text, "that is in the sandbox"


async def test_a_real_run_suggests_plain_commands(real: Backend) -> None:
    stage, _ = set_up("580.178.04")
    text = await done_text(view_for(stage, Effects(real), "ssh admin@t4"))  # type: ignore[arg-type]
    assert "gpuwizard detect" in text and "--simulate" not in text
    assert "source /opt/gpuwizard/envs/pytorch/bin/activate" in text


async def test_done_names_the_driver_that_was_installed(simulated: Backend) -> None:
    stage, _ = set_up("580.178.04")
    text = await done_text(view_for(stage, Effects(simulated), "ssh"))  # type: ignore[arg-type]
    assert "driver: 580.178.04 installed (R580, open)" in text
    assert "Choose named" not in text, "what Choose named is what is there"


def test_a_driver_other_than_the_one_named_says_why() -> None:
    stage, after = set_up("580.95.05")
    installed = installed_driver(stage.selection, after)
    assert installed == InstalledDriver("580", "open", "580.178.04", "580.95.05", "cuda-repo-apt")
    assert installed.line() == (
        "driver: 580.95.05 installed (R580, open). Choose named 580.178.04: NVIDIA's CUDA "
        "repository installs its own newest release of the branch, and it was not the one "
        "gpuwizard's table knew as the newest"
    )


def test_no_driver_line_where_the_driver_is_not_loaded_at_the_end() -> None:
    stage, _ = set_up("580.178.04")
    assert installed_driver(stage.selection, facts_of(PROFILE)) is None


@pytest.mark.parametrize(("attempt", "at_once"), [(0, False), (1, True)])
def test_the_benchmark_run_again_begins_at_once(simulated: Backend, attempt: int, at_once: bool) -> None:  # fmt: skip
    stage, after = set_up("580.178.04")
    benchmarking = flow.Benchmarking(after, stage.plan, stage.selection, attempt=attempt)
    view = view_for(benchmarking, Effects(simulated), "ssh")
    assert isinstance(view, BenchmarkView) and view.begin_at_once is at_once


def test_the_export_asks_about_files_already_in_the_folder(tmp_path: Path) -> None:
    (tmp_path / "deploy.sh").write_text("#!/bin/sh\n")
    (tmp_path / "answers.yaml").symlink_to(tmp_path / "gone")
    assert files_in(tmp_path, ["deploy.sh", "Dockerfile", "answers.yaml"]) == [
        "deploy.sh",
        "answers.yaml",
    ]
    assert files_in(tmp_path / "new", ["deploy.sh"]) == []


async def test_a_machine_without_an_nvidia_gpu_offers_no_continue(tmp_path: Path) -> None:
    facts = facts_of("nogpu-ubuntu2204")
    effects = Effects(sim_backend("nogpu-ubuntu2204", home=tmp_path))
    view = view_for(flow.ShowingMachine(flow.Context(facts)), effects, "ssh")
    assert isinstance(view, MachineView)
    app = ViewHarness(view)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        footer = [row for row in shown_text(app.export_screenshot()).splitlines() if row.strip()][
            -1
        ]
        assert "Continue" not in footer and "Quit" in footer
        await pilot.press("enter")
        await pilot.pause()
    assert app.answers == [], "Enter does nothing, and nothing says it would"


SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


def done_simulated() -> DoneView:
    """After a simulated setup whose archive had another R580 release than Choose named."""
    stage, after = set_up("580.95.05")
    assert stage.plan is not None
    return DoneView(
        list(stage.plan.summary[:3]), "/opt/gpuwizard/envs/pytorch", "/var/lib/gpuwizard/logs",
        "At or above the best published PyTorch numbers for this GPU (1.06x)",
        driver=installed_driver(stage.selection, after), cli_args=("--simulate", PROFILE),
    )  # fmt: skip


def no_gpu() -> MachineView:
    facts = facts_of("nogpu-ubuntu2204")
    return MachineView(facts, assess(facts, TABLE), can_continue=False)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", ["done-simulated", "detect-no-gpu"])
def test_the_view_looks_right(snap_compare, name: str, size) -> None:  # type: ignore[no-untyped-def]
    view = {"done-simulated": done_simulated, "detect-no-gpu": no_gpu}[name]()
    assert snap_compare(ViewHarness(view, sub_title=f"SIMULATION: {PROFILE}"), terminal_size=size)


@pytest.mark.parametrize("machine", ["simulated", "real"])
async def test_the_reboot_view_says_the_command_that_comes_back_to_this_machine(
    machine: str, request: pytest.FixtureRequest
) -> None:
    """On a simulated server, `gpuwizard` alone would open another machine: the way back names
    the profile; on the real one it is the bare command (noticed at stop 33)."""
    backend: Backend = request.getfixturevalue(machine)
    done, _ = set_up("580.178.04")
    assert done.plan is not None and done.selection is not None
    stage = flow.AwaitingReboot(done.plan, done.selection, "reboot", "the driver loads at boot")
    view = view_for(stage, Effects(backend), "ssh admin@t4")
    app = ViewHarness(view)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        text = shown_text(app.export_screenshot())
    again = f"gpuwizard --simulate {PROFILE}" if machine == "simulated" else "gpuwizard"
    way_back = [line.strip() for line in text.splitlines() if "then   gpuwizard" in line]
    assert way_back == [f"ssh admin@t4   then   {again}"]


async def test_the_benchmark_names_the_skipped_steps_and_esc_skips_it(simulated: Backend) -> None:
    """A setup with a skipped step is incomplete: the screen before the benchmark says which, as
    Verify and Done do; Esc there means later, as on the reboot view: it skips the benchmark, as
    s does (noticed at stop 33)."""
    stage, after = set_up("580.178.04")
    left = ("Install NVIDIA Fabric Manager (NVSwitch)",)
    view = view_for(flow.Benchmarking(after, stage.plan, stage.selection, left=left), Effects(simulated), "ssh")  # fmt: skip
    assert isinstance(view, BenchmarkView)
    assert view.about.startswith(f"Skipped at install: {left[0]}. The setup is incomplete")
    app = ViewHarness(view)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        assert "Skipped at install" in shown_text(app.export_screenshot())
        await pilot.press("escape")
        await pilot.pause()
    assert app.answers == [flow.Benchmarked(None)]
    plain = view_for(flow.Benchmarking(after, stage.plan, stage.selection), Effects(simulated), "ssh")  # fmt: skip
    assert isinstance(plain, BenchmarkView) and "Skipped" not in plain.about
