"""How each screen looks, at 80x24 and 120x40 (SVG snapshots; Textual is pinned exactly).

Review a change in snapshot_report.html before accepting it with `pytest --snapshot-update`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.screen import Screen

from gpuwizard.detect.recording import recorded_host
from gpuwizard.doctor.diagnose import diagnose
from gpuwizard.doctor.findings import Report
from gpuwizard.export.formats import FORMATS, render
from gpuwizard.export.source import ALREADY_SET_UP, ExportSource
from gpuwizard.facts import VerifyReport
from gpuwizard.planner import Options, plan_for
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.result import Choices, Recommendation
from gpuwizard.recommend.sizing import assess
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import target_from_facts
from gpuwizard.runner import events as ev
from gpuwizard.screens.detect import DetectScreen
from gpuwizard.screens.doctor import DoctorScreen
from gpuwizard.screens.done import DoneScreen
from gpuwizard.screens.export import ExportScreen
from gpuwizard.screens.help import HelpScreen
from gpuwizard.screens.install import InstallScreen
from gpuwizard.screens.modals import QuitScreen, SecretScreen
from gpuwizard.screens.reboot import RebootScreen
from gpuwizard.screens.recommend import RecommendScreen
from gpuwizard.screens.resume import ResumeScreen
from gpuwizard.screens.review import ReviewScreen
from gpuwizard.screens.verify import VerifyScreen
from tests.conftest import facts_of, profile_dir

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]
TABLE = load_table()
FACTS = facts_of("a100x4-ubuntu2004-fresh")


def recommendation() -> Recommendation:
    result = recommend(TABLE, target_from_facts(FACTS, TABLE), Choices())
    assert isinstance(result, Recommendation)
    return result


class FakeRun:
    """A RunControl that replays scripted events once."""

    def __init__(
        self, events: list[ev.RunEvent], journal: list[tuple[str, str, str]] | None = None
    ) -> None:
        self.events = events
        self.journal = journal or []

    def start(self, one_step: bool) -> bool:
        return True

    def running(self) -> bool:
        return False

    def poll(self) -> list[ev.RunEvent]:
        events, self.events = self.events, []
        return events

    def skip(self, step_id: str) -> None:
        pass

    def send_secret(self, value: str) -> None:
        pass

    def journal_steps(self) -> list[tuple[str, str, str]]:
        return self.journal

    @property
    def logs_hint(self) -> str:
        return "/var/lib/gpuwizard/logs"


class Harness(App[None]):
    """Mounts one screen, with the wizard's title, for a snapshot."""

    TITLE = "gpuwizard"
    SUB_TITLE = "SIMULATION: a100x4-ubuntu2004-fresh"

    def __init__(self, screen: Screen[Any]) -> None:
        super().__init__()
        self.shown = screen

    def on_mount(self) -> None:
        self.push_screen(self.shown)


def plan():  # type: ignore[no-untyped-def]
    return plan_for(FACTS, recommendation(), Options(), TABLE)[1]


def export_screen(note: str | None = None) -> ExportScreen:
    """The Export screen on the plan above, writing nowhere."""
    selection, made = plan_for(FACTS, recommendation(), Options(), TABLE)
    source = ExportSource(made, selection, FACTS, version="0.1.0")
    formats = [(f.name, f.title) for f in FORMATS.values()]
    return ExportScreen(
        formats, lambda name: render(source, name), lambda d, f: [], "/root/gpuwizard-export", note
    )


FAILED_RUN: list[ev.RunEvent] = [
    ev.StepSkipped("wait-cloud-init", "cloud-init is done"),
    ev.StepStarted("upgrade-kernel", "Apply the pending kernel update", 1),
    ev.ActionStarted("upgrade-kernel", 0, "apt-get -q update"),
    ev.LogLines(
        "upgrade-kernel",
        ("Hit:1 http://archive.ubuntu.com/ubuntu focal InRelease", "Reading package lists... Done"),
    ),
    ev.ActionStarted("upgrade-kernel", 1, "apt-get -q -y full-upgrade"),
    ev.LogLines(
        "upgrade-kernel",
        (
            "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4750 (unattended-upgr)",
        ),
    ),
    ev.ActionFinished("upgrade-kernel", 1, False, "exited 100"),
    ev.StepFinished(
        "upgrade-kernel", False, "exited 100", "/var/lib/gpuwizard/logs/run-1/upgrade-kernel.log"
    ),
    ev.RunStopped("failed", "exited 100", "upgrade-kernel"),
]


def doctor_report(profile: str) -> Report:
    """The doctor on a recorded host, with no state directory: the same every time."""
    return diagnose(recorded_host(profile_dir(profile)), Path("/nonexistent/gpuwizard")).report


RESUMED = [  # the journal after the first reboot: what ran shows as done
    ("upgrade-kernel", "done", "running the newest kernel"),
    ("reboot-kernel", "done", "nothing waits for a reboot"),
]

SCREENS = {
    "detect": lambda: DetectScreen(FACTS, assess(FACTS, TABLE), can_continue=True),
    "recommend": lambda: RecommendScreen(recommendation(), Choices(), Options(), lambda c, o: recommendation(), ["2.14.1", "2.13.0"]),
    "review": lambda: ReviewScreen(plan()),
    "install-waiting": lambda: InstallScreen(plan(), FakeRun([]), attach=False, clock=lambda: 0.0),
    "install-failed": lambda: InstallScreen(plan(), FakeRun(FAILED_RUN), attach=False, clock=lambda: 0.0),
    "install-resumed": lambda: InstallScreen(plan(), FakeRun([], RESUMED), attach=False, clock=lambda: 0.0),
    "reboot": lambda: RebootScreen("the updated kernel is not running yet", "ssh ubuntu@gpu-1   then   gpuwizard", False),
    "resume": lambda: ResumeScreen([("Disable the nouveau driver", "done", "nouveau is not loaded"), ("Reboot", "done", "nothing waits for a reboot")], "Install a newer Python"),
    "resume-stopped": lambda: ResumeScreen([], "Reboot", rebooted=False, problem="the boot_id cannot be read, so it is unknown whether the reboot happened; check, then run again"),
    "verify": lambda: VerifyScreen(VerifyReport("/opt/gpuwizard/envs/pytorch", "2.14.1", None, True, ("0: NVIDIA A100-SXM4-40GB (sm_80)",) * 4)),
    "export": export_screen,
    "export-set-up-already": lambda: export_screen(ALREADY_SET_UP),
    "done": lambda: DoneScreen(list(plan().summary[:3]), "/opt/gpuwizard/envs/pytorch", "/var/lib/gpuwizard/logs"),
    "help": lambda: HelpScreen("/var/lib/gpuwizard", simulated=True),
    "secret": lambda: SecretScreen("One-time MOK password (8-16 characters)"),
    "quit-running": lambda: QuitScreen(running=True),
    "doctor": lambda: DoctorScreen(doctor_report("a100x8-ubuntu2204-neglected")),
    "doctor-healthy": lambda: DoctorScreen(doctor_report("v100x4-ubuntu2204-driver535")),
}  # fmt: skip


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", list(SCREENS))
def test_screen_looks_right(snap_compare, name, size):  # type: ignore[no-untyped-def]
    assert snap_compare(Harness(SCREENS[name]()), terminal_size=size)
