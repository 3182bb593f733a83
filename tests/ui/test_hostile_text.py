"""Every screen shows text from outside literally (issue 19): markup in a fact stays text.

Each screen gets values that carry Rich markup (``[@click=app.quit]`` would become a clickable
action, ``[link=...]`` a spoofed hyperlink) and terminal escapes, as a crafted host, log or
plan could. The rendered screen must show the markup characters as written, and hold no
control or format character.
"""

from __future__ import annotations

import dataclasses
import html
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.screen import Screen

from gpuwizard.core.facts import Nic, VerifyReport
from gpuwizard.core.request import SetupRequest
from gpuwizard.doctor.diagnose import diagnose
from gpuwizard.doctor.findings import Finding as DoctorFinding
from gpuwizard.doctor.findings import Report
from gpuwizard.export.formats import ExportFile
from gpuwizard.export.source import ExportError
from gpuwizard.machine.detect import detect_host
from gpuwizard.machine.detect.recording import recorded_host
from gpuwizard.recommend.sizing import Finding, assess
from gpuwizard.recommend.table import load_table
from gpuwizard.runner import events as ev
from gpuwizard.runner.events import StopReason
from gpuwizard.screens.benchmark import BenchmarkView
from gpuwizard.screens.choose import ChooseView
from gpuwizard.screens.doctor import DoctorScreen
from gpuwizard.screens.done import DoneView
from gpuwizard.screens.export import ExportView
from gpuwizard.screens.help import HelpScreen
from gpuwizard.screens.install import InstallView
from gpuwizard.screens.machine import MachineView
from gpuwizard.screens.modals import SecretScreen
from gpuwizard.screens.reboot import RebootView
from gpuwizard.screens.refused import RefusedView
from gpuwizard.screens.resume import ResumeView
from gpuwizard.screens.review import ReviewView
from gpuwizard.screens.shell import StageView
from gpuwizard.screens.verify import VerifyView
from gpuwizard.setup.stages import Installing, Resuming
from tests.cli.test_hostile_text import make_hostile_host
from tests.ui.pilots import FakeMachine, ViewHarness, run_of
from tests.ui.test_benchmark import RecordedBench, events_of
from tests.ui.test_snapshots import FACTS, NOW, plan, planned, recommendation

CLICK = "[@click=app.quit]"
LINK = "[link=https://evil.example]spoof[/link]"
ESCAPES = "\x1b]52;c;cm0=\x07\x1b]8;;https://evil.example\x1b\\\x1b[2J\x07\u202e"
HOSTILE = f"{CLICK}{LINK}{ESCAPES}"
"""A value with both kinds of trouble; every screen shows it somewhere."""


def hostile_facts():  # type: ignore[no-untyped-def]
    assert FACTS.os is not None
    return dataclasses.replace(
        FACTS,
        os=dataclasses.replace(FACTS.os, pretty_name=HOSTILE),
        hardware=dataclasses.replace(
            FACTS.hardware, cpu_model=HOSTILE, nics=(Nic(HOSTILE, "ethernet", 100000),)
        ),
    )


def hostile_plan():  # type: ignore[no-untyped-def]
    made = plan()
    steps = tuple(
        dataclasses.replace(s, title=f"{s.title} {HOSTILE}", why=HOSTILE) for s in made.steps
    )
    return dataclasses.replace(made, summary=(HOSTILE, *made.summary), steps=steps)


def hostile_recommendation():  # type: ignore[no-untyped-def]
    made = recommendation()
    return dataclasses.replace(made, reasons=(HOSTILE, *made.reasons), changes=(HOSTILE,))


def install_events() -> list[ev.RunEvent]:
    step = hostile_plan().steps[1]
    return [
        ev.RunStarted("run-1", 1, None, ()),
        ev.StepStarted(step.id, step.title, 1),
        ev.ActionStarted(step.id, 0, f"apt-get install {HOSTILE}"),
        ev.LogLines(step.id, (f"E: {HOSTILE}",)),
        ev.StepFinished(step.id, False, HOSTILE, f"/var/lib/gpuwizard/logs/{HOSTILE}.log"),
        ev.RunStopped(StopReason.FAILED, HOSTILE, step.id),
    ]


def resume_events() -> list[ev.RunEvent]:
    step = hostile_plan().steps[2]
    return [
        ev.RunStarted("run-1", 1, None, ()),
        ev.RebootDetected("boot-a", "boot-b"),
        ev.StepFinished(step.id, False, HOSTILE),
        ev.RunStopped(StopReason.FAILED, HOSTILE, step.id),
    ]


def failing_render(name: str) -> list[ExportFile]:
    if name == "script":
        return [ExportFile(f"deploy-{HOSTILE}.sh", f"# {HOSTILE}\n", 0o755, "bash")]
    raise ExportError(HOSTILE)


def doctor_report() -> Report:
    finding = DoctorFinding("xid", "problem", HOSTILE, HOSTILE, HOSTILE, (f"dmesg: {HOSTILE}",))
    return Report((finding,), (HOSTILE,))


SCREENS: dict[str, Callable[[], Screen[Any] | StageView]] = {
    "detect": lambda: MachineView(hostile_facts(), (Finding("x", "warning", HOSTILE, HOSTILE),), True),
    "recommend": lambda: ChooseView(hostile_recommendation(), SetupRequest(), lambda r: hostile_recommendation(), lambda r, res: {"torch": ("2.14.1",)}),
    "review": lambda: ReviewView(hostile_plan()),
    "install": lambda: InstallView(Installing(hostile_plan(), planned()[0], run=run_of(install_events())), FakeMachine(), now=lambda: NOW),
    "reboot": lambda: RebootView(HOSTILE, HOSTILE, False),
    "resume": lambda: ResumeView(Resuming(hostile_plan(), planned()[0], run=run_of(resume_events()), checked=True)),
    "verify": lambda: VerifyView(VerifyReport(HOSTILE, HOSTILE, None, False, (HOSTILE,), (HOSTILE,))),
    "export": lambda: ExportView([("script", "Deploy script"), ("answers", "Answers")], failing_render, lambda d, f: [], "/root/x", HOSTILE),
    "done": lambda: DoneView([HOSTILE], HOSTILE, HOSTILE, HOSTILE, [HOSTILE]),
    "help": lambda: HelpScreen(HOSTILE, simulated=True),
    "secret": lambda: SecretScreen(HOSTILE),
    "doctor": lambda: DoctorScreen(doctor_report()),
    "refused": lambda: RefusedView(HOSTILE, can_go_back=True),  # issue 28: shown uncleaned
}  # fmt: skip


def shown_text(svg: str) -> str:
    """What the screenshot shows, as text: markup characters are not escaped by Rich's SVG."""
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


def unsafe_in(text: str) -> list[str]:
    return [
        f"U+{ord(c):04X}"
        for c in text
        if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")
    ]


async def rendered(screen: Screen[Any] | StageView, pauses: int = 3) -> tuple[str, ViewHarness]:
    app = ViewHarness(screen)
    async with app.run_test(size=(220, 90)) as pilot:
        for _ in range(pauses):
            await pilot.pause(0.1)
        return app.export_screenshot(), app


@pytest.mark.parametrize("name", list(SCREENS))
async def test_markup_in_external_text_is_shown_literally(name: str) -> None:
    svg, _ = await rendered(SCREENS[name]())
    text = shown_text(svg)

    assert CLICK in text, f"{name}: the [@click] markup was interpreted, or the value not shown"
    assert LINK in text, f"{name}: the [link] markup was interpreted, or the value not shown"
    assert unsafe_in(text) == []
    # Every "evil.example" in the picture is shown text (the value, wherever its line broke),
    # none is in an attribute: no hyperlink to the value's URL was made.
    assert svg.count("evil.example") == text.count("evil.example"), (
        "a hyperlink to the value's URL was made"
    )


async def test_the_export_screen_shows_a_failed_format_literally() -> None:
    screen = SCREENS["export"]()
    app = ViewHarness(screen)
    async with app.run_test(size=(220, 90)) as pilot:
        await pilot.pause(0.1)
        assert isinstance(app.shell.view, ExportView)
        app.shell.view.show("answers")  # its render fails with the hostile message
        await pilot.pause(0.1)
        text = shown_text(app.export_screenshot())
    assert f"answers cannot be made for this plan: {CLICK}{LINK}" in text
    assert unsafe_in(text) == []


async def test_the_benchmark_screen_shows_notes_and_problems_literally(tmp_path: Path) -> None:
    stream: list[Any] = ["── one GPU", *events_of("h100x8-sim.jsonl"), HOSTILE]
    source = RecordedBench(stream, "8x H100 SXM5 80GB", tmp_path / "bench", problems=(HOSTILE,))
    screen = BenchmarkView(source, HOSTILE)
    app = ViewHarness(screen)
    async with app.run_test(size=(220, 90)) as pilot:
        await pilot.pause(0.1)
        ready = shown_text(app.export_screenshot())
        await pilot.press("enter")
        for _ in range(50):
            await pilot.pause(0.1)
            if screen.state == "done":
                break
        done = shown_text(app.export_screenshot())
    assert screen.state == "done"
    for text in (ready, done):
        assert CLICK in text and LINK in text
        assert unsafe_in(text) == []


async def test_a_hostile_recorded_host_shows_clean_on_the_detect_and_doctor_screens(
    tmp_path: Path,
) -> None:
    """The recorded host of tests/cli/test_hostile_text.py: its os-release, CPU name and kernel
    log carry OSC 52, OSC 8, CSI 2J, BEL and U+202E; the screens show the text, cleaned."""
    host = recorded_host(make_hostile_host(tmp_path))
    facts = detect_host(host)
    report = diagnose(host, tmp_path / "no-state").report
    quoting = tuple(f for f in report.findings if any("click me" in e for e in f.evidence))
    assert quoting, "the doctor quotes the hostile kernel log line"
    shown = Report(quoting, report.unread)  # the one finding, so that it fits on the screen
    for screen in (MachineView(facts, assess(facts, load_table()), True), DoctorScreen(shown)):
        text = shown_text((await rendered(screen))[0])
        assert unsafe_in(text) == []
        words = " ".join(text.replace("█", " ").split())  # the modal's border, its wrapped lines
        assert "click me" in words and "gnp.exe" in words, type(screen).__name__
