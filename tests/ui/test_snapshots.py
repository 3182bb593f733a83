"""How each screen looks, at 80x24 and 120x40 (SVG snapshots; Textual is pinned exactly).

Review a change in snapshot_report.html before accepting it with `pytest --snapshot-update`.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from gpuwizard.core.facts import VerifyReport
from gpuwizard.core.request import SetupRequest
from gpuwizard.doctor.diagnose import diagnose
from gpuwizard.doctor.findings import Report
from gpuwizard.export.formats import FORMATS, render
from gpuwizard.export.source import ALREADY_SET_UP, ExportSource
from gpuwizard.frontends.stageviews import offers_on
from gpuwizard.machine.detect.recording import recorded_host
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.planner import plan_for
from gpuwizard.recommend.result import Recommendation
from gpuwizard.recommend.sizing import assess
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import target_from_facts
from gpuwizard.runner import events as ev
from gpuwizard.runner.events import StopReason
from gpuwizard.screens.choose import ChooseView, Offers
from gpuwizard.screens.doctor import DoctorScreen
from gpuwizard.screens.done import DoneView
from gpuwizard.screens.export import ExportView
from gpuwizard.screens.help import HelpScreen
from gpuwizard.screens.install import InstallView
from gpuwizard.screens.machine import MachineView
from gpuwizard.screens.modals import QuitScreen, SecretScreen
from gpuwizard.screens.reboot import RebootView
from gpuwizard.screens.resume import ResumeView
from gpuwizard.screens.review import ReviewView
from gpuwizard.screens.verify import VerifyView
from gpuwizard.setup.stages import Installing, Resuming, SetUp
from tests.conftest import facts_of, profile_dir
from tests.ui.pilots import FakeMachine, ViewHarness, run_of

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]
TABLE = load_table()
FACTS = facts_of("a100x4-ubuntu2004-fresh")


def recommendation() -> Recommendation:
    result = recommend(TABLE, target_from_facts(FACTS, TABLE), SetupRequest())
    assert isinstance(result, Recommendation)
    return result


def planned():  # type: ignore[no-untyped-def]
    return plan_for(FACTS, recommendation(), SetupRequest(), TABLE)


def plan():  # type: ignore[no-untyped-def]
    return planned()[1]


def installing(events: list[ev.RunEvent], **changes: Any) -> Installing:
    """The install stage of the plan above, its run folded from ``events`` (its runner at work
    while they leave a step running)."""
    selection, made = planned()
    run = run_of(events)
    return Installing(made, selection, run=run, **{"awaiting": run.running, **changes})


def resuming(events: list[ev.RunEvent]) -> Resuming:
    """The check after a reboot, ended, its run folded from ``events``."""
    selection, made = planned()
    return Resuming(made, selection, run=run_of(events), checked=True)


def export_view(note: str | None = None) -> ExportView:
    """The Export screen on the plan above, writing nowhere."""
    selection, made = plan_for(FACTS, recommendation(), SetupRequest(), TABLE)
    source = ExportSource(made, selection, FACTS, version="0.1.0")
    formats = [(f.name, f.title) for f in FORMATS.values()]
    return ExportView(
        formats, lambda name: render(source, name), lambda d, f: [], "/root/gpuwizard-export", note
    )


LOGS = Path("/tmp/gpuwizard-snapshots/logs/run-1")
"""Where the runs below keep their steps' logs: a fixed place, for the pictures (``logs``)."""
KERNEL_LOG = str(LOGS / "upgrade-kernel.log")
FAILED_RUN: list[ev.RunEvent] = [
    ev.StepSkipped("wait-cloud-init", "cloud-init is done"),
    ev.StepStarted("upgrade-kernel", "Apply the pending kernel update", 1, KERNEL_LOG),
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
    ev.StepFinished("upgrade-kernel", False, "exited 100", KERNEL_LOG),
    ev.RunStopped(StopReason.FAILED, "exited 100", "upgrade-kernel"),
]


DISK_FULL_RUN: list[ev.RunEvent] = [
    ev.StepSkipped("wait-cloud-init", "cloud-init is done"),
    ev.StepStarted("upgrade-kernel", "Apply the pending kernel update", 1, KERNEL_LOG),
    ev.ActionStarted("upgrade-kernel", 0, "apt-get -q -y full-upgrade"),
    ev.LogLines(
        "upgrade-kernel",
        (
            "Need to get 1,236 MB of archives.",
            "After this operation, 3,114 MB of additional disk space will be used.",
            "E: You don't have enough free space in /var/cache/apt/archives/.",
        ),
    ),
    ev.ActionFinished("upgrade-kernel", 0, False, "exited 100"),
    ev.StepFinished("upgrade-kernel", False, "exited 100", KERNEL_LOG),
    ev.RunStopped(StopReason.FAILED, "exited 100", "upgrade-kernel"),
]


def doctor_report(profile: str) -> Report:
    """The doctor on a recorded host, with no state directory: the same every time."""
    return diagnose(recorded_host(profile_dir(profile)), Path("/nonexistent/gpuwizard")).report


NOW = datetime(2026, 12, 3, 10, 0, 0, tzinfo=timezone.utc)
STARTED = ev.RunStarted("run-1", 100, None, ())
RESUMED: list[ev.RunEvent] = [  # the run after the first reboot: what ran shows as done
    STARTED,
    ev.StepFinished("upgrade-kernel", True, "running the newest kernel"),
    ev.StepFinished("reboot-kernel", True, "nothing waits for a reboot"),
    ev.RunStopped(StopReason.PAUSED, "checked after the reboot; waiting for your go-ahead"),
]
BEFORE_REBOOT: list[ev.RunEvent] = [
    STARTED,
    *(ev.StepFinished(step, True, "done") for step in ("upgrade-kernel", "reboot-kernel")),
    ev.StepAwaitingReboot("blacklist-nouveau", "takes effect at the next boot"),
    *(
        ev.StepFinished(step, True, "done")
        for step in ("install-nvidia-driver", "enable-persistence")
    ),
    ev.RebootRequested("reboot", "boot-a", 1, "the driver loads at boot"),
    ev.RunStopped(StopReason.REBOOT, "reboot needed", "reboot"),
]
CHECKED: list[ev.RunEvent] = [
    *BEFORE_REBOOT,
    STARTED,
    ev.RebootDetected("boot-a", "boot-b"),
    ev.StepFinished("blacklist-nouveau", True, "nouveau is not loaded"),
    ev.StepFinished("reboot", True, "nothing waits for a reboot"),
    ev.RunStopped(StopReason.PAUSED, "checked after the reboot; waiting for your go-ahead"),
]
CHECK_STOPPED: list[ev.RunEvent] = [
    *BEFORE_REBOOT,
    STARTED,
    ev.RunStopped(
        StopReason.BOOT_UNKNOWN,
        "the boot_id cannot be read, so it is unknown whether the reboot happened; check, then run again",
        "reboot",
    ),
]


def reattached() -> InstallView:
    """A terminal comes back to a step that has run for 7 min 12 s (its start is the journal's)."""
    events = [
        STARTED,
        ev.StepSkipped("wait-cloud-init", "cloud-init is done"),
        ev.StepStarted("upgrade-kernel", "Apply the pending kernel update", 1),
        ev.ActionStarted("upgrade-kernel", 1, "apt-get -q -y full-upgrade"),
    ]
    later = NOW + timedelta(minutes=7, seconds=12)
    return InstallView(installing(events, attach=True), FakeMachine(), now=lambda: later)


def install(events: list[ev.RunEvent]) -> InstallView:
    return InstallView(installing(events), FakeMachine(), now=lambda: NOW)


def recommend_view() -> ChooseView:
    """The Recommend screen as the wizard builds it: the real engine behind every choice."""
    target = target_from_facts(FACTS, TABLE)
    return ChooseView(
        recommendation(), SetupRequest(),
        lambda request: recommend(TABLE, target, request), offers_on(TABLE, target),
    )  # fmt: skip


def releases(*versions: str) -> Offers:
    """A host that offers these torch releases and nothing else to choose."""
    return lambda request, result: {"torch": versions, "variant": (), "driver_branch": (), "driver_flavour": (), "python": (), "keep_driver": ()}  # fmt: skip


H200_VM = facts_of("h200-vm-ubuntu2404-preinstalled")
"""The real H200 microVM (issue 26): virtio disks, a NIC without a speed, a container image without
systemd, a torch already installed, a healthy GPU."""

SCREENS = {
    "detect": lambda: MachineView(FACTS, assess(FACTS, TABLE), can_continue=True),
    "detect-h200-vm": lambda: MachineView(H200_VM, assess(H200_VM, TABLE), can_continue=True),
    "detect-set-up": lambda: MachineView(FACTS, assess(FACTS, TABLE), can_continue=True, set_up=SetUp("run-1a2b3c4d", "2026-12-04T22:31:00+00:00", ("Install NVIDIA Fabric Manager (NVSwitch)",))),
    "recommend": lambda: ChooseView(recommendation(), SetupRequest(), lambda r: recommendation(), releases("2.14.1", "2.13.0")),
    "recommend-builds": recommend_view,
    "review": lambda: ReviewView(plan()),
    "install-waiting": lambda: install([]),
    "install-failed": lambda: install([STARTED, *FAILED_RUN]),
    "install-disk-full": lambda: install([STARTED, *DISK_FULL_RUN]),
    "install-resumed": lambda: install(RESUMED),
    "install-reattached": reattached,
    "reboot": lambda: RebootView("the updated kernel is not running yet", "ssh ubuntu@gpu-1   then   gpuwizard", False),
    "reboot-mok": lambda: RebootView("the driver loads at boot, signed with the Machine Owner Key enrolled then", "ssh admin@t4-1   then   gpuwizard", False, mok=True),
    "resume": lambda: ResumeView(resuming(CHECKED)),
    "resume-stopped": lambda: ResumeView(resuming(CHECK_STOPPED)),
    "verify": lambda: VerifyView(VerifyReport("/opt/gpuwizard/envs/pytorch", "2.14.1", None, True, ("0: NVIDIA A100-SXM4-40GB (sm_80)",) * 4)),
    "export": export_view,
    "export-set-up-already": lambda: export_view(ALREADY_SET_UP),
    "done": lambda: DoneView(list(plan().summary[:3]), "/opt/gpuwizard/envs/pytorch", "/var/lib/gpuwizard/logs"),
    "done-skipped": lambda: DoneView(list(plan().summary[:3]), "/opt/gpuwizard/envs/pytorch", "/var/lib/gpuwizard/logs", left=("Install NVIDIA Fabric Manager (NVSwitch)",)),
    "help": lambda: HelpScreen("/var/lib/gpuwizard", simulated=True),
    "secret": lambda: SecretScreen("One-time MOK password (8-16 characters)"),
    "quit-running": lambda: QuitScreen(running=True),
    "doctor": lambda: DoctorScreen(doctor_report("a100x8-ubuntu2204-neglected")),
    "doctor-healthy": lambda: DoctorScreen(doctor_report("v100x4-ubuntu2204-driver535")),
    "doctor-h200-vm": lambda: DoctorScreen(doctor_report("h200-vm-ubuntu2404-preinstalled")),
}  # fmt: skip


def the_log_of(events: list[ev.RunEvent]) -> str:
    """A step's log file as the runner writes it: each command, then its output."""
    lines: list[str] = []
    for event in events:
        if isinstance(event, ev.ActionStarted):
            lines += ["", f"$ {event.command}"]
        elif isinstance(event, ev.LogLines):
            lines += event.lines
    return "\n".join(lines) + "\n"


@pytest.fixture
def logs(request: pytest.FixtureRequest) -> None:
    """The log file of the failing step a picture shows, where its events say it is."""
    name = request.node.callspec.params["name"]
    events = {"install-failed": FAILED_RUN, "install-disk-full": DISK_FULL_RUN}.get(name)
    LOGS.mkdir(parents=True, exist_ok=True)
    Path(KERNEL_LOG).write_text(the_log_of(events or []), encoding="utf-8")


@pytest.mark.usefixtures("logs")
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", list(SCREENS))
def test_screen_looks_right(snap_compare, name, size):  # type: ignore[no-untyped-def]
    async def settled(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.pause()

    assert snap_compare(ViewHarness(SCREENS[name]()), terminal_size=size, run_before=settled)
