"""One application core: the same answers given through the TUI (keystrokes) and through
`gpuwizard apply --yes` set up two identical simulated servers the same way: the same journal
(run ids, times and boot ids normalised) and the same runner events, kind by kind. And the shell
survives what people do to it: stage views swapped as fast as the app can, and the whole flow
again and again, without an exception and without pressing a key twice."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gpuwizard.frontends.app import GpuWizardApp
from gpuwizard.runner.layout import EVENTS, JOURNAL
from gpuwizard.screens.benchmark import BenchmarkView
from gpuwizard.screens.choose import ChooseView
from gpuwizard.screens.done import DoneView
from gpuwizard.screens.export import ExportView
from gpuwizard.screens.install import InstallView
from gpuwizard.screens.machine import MachineView
from gpuwizard.screens.reboot import RebootView
from gpuwizard.screens.resume import ResumeView
from gpuwizard.screens.review import ReviewView
from gpuwizard.screens.verify import VerifyView
from gpuwizard.sim.backend import sim_backend
from gpuwizard.sim.sandbox import place_for
from tests.cli.helpers import gpuwizard
from tests.ui.pilots import shows, until, view_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
PROFILE = "h100x8-ubuntu2204-fresh"
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?")


def normalised(home: Path) -> tuple[Any, list[str]]:
    """The journal with run ids, times, boot ids and the home replaced; the events' kinds."""
    state = place_for(PROFILE, home / "gpuwizard").state_dir
    text = (state / JOURNAL).read_text().replace(str(home), "HOME")
    journal = json.loads(text)
    text = text.replace(journal["run_id"], "RUN")
    text = TIME.sub("TIME", text)
    for n, boot in enumerate(dict.fromkeys(re.findall(r'"boot_id\w*": "([^"]+)"', text))):
        text = text.replace(boot, f"BOOT-{n}")
    text = re.sub(r'"(\w*_at|started|finished_s|seconds|elapsed_s)": [\d.]+', r'"\1": 0', text)
    events = [json.loads(line) for line in (state / EVENTS).read_text().splitlines()]
    return json.loads(text), flow_kinds([e["event"]["kind"] for e in events])


def flow_kinds(kinds: list[str]) -> list[str]:
    """The events' kinds, a command's output counted as one "log" wherever it came in several
    (the terminal hands output over in as many reads as timing makes), and none for a command
    the reboot cut off: the reboot command's own output may or may not be written before the
    runner goes down with the machine, as on a real server. What fetching ahead reports is left
    out: when its items end against the steps is timing, and the TUI, which starts a runner per
    step, starts its rounds at other moments than `apply` (its events are tested on their own in
    tests/sim/test_ahead.py)."""
    kept: list[str] = []
    kinds = [kind for kind in kinds if kind != "fetched-ahead"]
    for kind, after in zip(kinds, [*kinds[1:], None], strict=True):
        if kind == "log" and (kept[-1:] == ["log"] or after == "run-started"):
            continue
        kept.append(kind)
    return kept


def test_the_flow_kinds_count_output_once_and_forgive_the_reboot_its_last_words() -> None:
    reboot = ["action-started", "log", "run-started", "reboot-detected"]
    assert flow_kinds(["action-started", "log", "log", "action-finished", *reboot]) == [
        "action-started", "log", "action-finished", "action-started", "run-started",
        "reboot-detected",
    ]  # fmt: skip


async def test_the_same_answers_through_the_tui_and_apply_leave_the_same_journal_and_events(
    tmp_path: Path,
) -> None:
    by_keys, by_apply = tmp_path / "tui", tmp_path / "apply"
    app = GpuWizardApp(sim_backend(PROFILE, home=by_keys / "gpuwizard"))
    async with app.run_test(size=(100, 32)) as pilot:
        for view, key in (
            (MachineView, "enter"),  # continue
            (ChooseView, "c"),  # the recommendation as it is
            (ReviewView, "s"),  # start
            (InstallView, "a"),  # run all
            (RebootView, "r"),  # reboot now
        ):
            await until(pilot, shows(pilot, view))
            await pilot.press(key)
        await until(pilot, shows(pilot, ResumeView))
        await until(pilot, lambda: view_of(pilot).done)
        await pilot.press("enter")
        await until(pilot, shows(pilot, InstallView))
        await pilot.press("a")
        await until(pilot, shows(pilot, VerifyView))
    by_apply.mkdir()
    first = gpuwizard(by_apply, "--simulate", PROFILE, "apply", "--yes")
    assert first.returncode == 10, first.stdout + first.stderr  # rebooting
    second = gpuwizard(by_apply, "--simulate", PROFILE, "apply", "--yes")
    assert second.returncode == 0, second.stdout + second.stderr

    journal, kinds = normalised(by_keys)
    assert journal["finished"]
    assert normalised(by_apply) == (journal, kinds)


async def test_two_hundred_stage_switches_as_fast_as_the_app_shows_them(tmp_path: Path) -> None:
    """Each key waits for the view it is meant for (a key pressed mid-swap is a typist's, and
    Textual gives it to whatever has the focus then): never a key pressed twice."""
    app = GpuWizardApp(sim_backend(PROFILE, home=tmp_path / "gpuwizard"))
    shown: list[type] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, shows(pilot, MachineView))
        show = app.shell.show

        async def counted(view: Any) -> None:
            shown.append(type(view))
            await show(view)

        app.shell.show = counted  # type: ignore[method-assign]
        for _ in range(100):  # the machine -> choose -> the machine
            await pilot.press("enter")
            await until(pilot, shows(pilot, ChooseView))
            await pilot.press("b")
            await until(pilot, shows(pilot, MachineView))
    assert shown == [ChooseView, MachineView] * 100


WHOLE_FLOW = (
    (MachineView, "enter"),  # continue
    (ChooseView, "c"),  # the recommendation as it is
    (ReviewView, "s"),  # start
    (InstallView, "a"),  # run all
    (RebootView, "r"),  # reboot now
)
AFTER_THE_REBOOT = (
    (InstallView, "a"),  # the steps after the reboot
    (VerifyView, "enter"),
    (BenchmarkView, "s"),  # skip the benchmark
    (ExportView, "c"),
    (DoneView, "enter"),
)


async def whole_flow(home: Path) -> int | None:
    """The wizard from the machine to Done, the reboot between; its exit status."""
    app = GpuWizardApp(sim_backend(PROFILE, home=home / "gpuwizard"))
    async with app.run_test(size=(80, 24)) as pilot:
        for view, key in WHOLE_FLOW:
            await until(pilot, shows(pilot, view))
            await pilot.press(key)
        await until(pilot, shows(pilot, ResumeView))
        await until(pilot, lambda: view_of(pilot).done)
        await pilot.press("enter")
        for view, key in AFTER_THE_REBOOT:
            await until(pilot, shows(pilot, view))
            await pilot.press(key)
        await until(pilot, lambda: not app.is_running)
    return app.return_code


@pytest.mark.timeout(900)
async def test_the_whole_flow_twenty_times_in_a_row(tmp_path: Path) -> None:
    codes = [await whole_flow(tmp_path / str(n)) for n in range(20)]
    assert codes == [0] * 20
