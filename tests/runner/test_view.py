"""The one fold of runner events (RunView): level-triggered, so a replay from the start shows
what watching live showed, and an old reboot request is never the current run's ending."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from gpuwizard.runner import events as ev
from gpuwizard.runner.events import StopReason
from gpuwizard.runner.journal import Journal
from gpuwizard.runner.layout import EVENTS, JOURNAL
from gpuwizard.runner.view import Finished, RebootAsked, RunView, Stopped, fold, view_of
from gpuwizard.sim.sandbox import place_for
from tests.cli.helpers import gpuwizard

_seq = itertools.count(1)


def env(event: ev.RunEvent, time: str = "2026-12-03T10:00:00.000+00:00") -> ev.Envelope:
    return ev.Envelope(next(_seq), time, event)


BEFORE_REBOOT = [
    env(ev.RunStarted("run-1", 100, "boot-a", ("drivers", "reboot", "torch"))),
    env(ev.StepStarted("drivers", "Install the driver", 1), "2026-12-03T10:00:01.000+00:00"),
    env(ev.ActionStarted("drivers", 0, "apt-get install nvidia-driver")),
    env(ev.LogLines("drivers", ("Setting up nvidia-driver ...",))),
    env(ev.StepAwaitingReboot("drivers", "takes effect at the next boot")),
    env(ev.RebootRequested("reboot", "boot-a", 1, "the driver loads at boot")),
    env(ev.RunStopped(StopReason.REBOOT, "reboot needed", "reboot")),
]
CHECK_AFTER_REBOOT = [
    env(ev.RunStarted("run-1", 200, "boot-b", ("drivers", "reboot", "torch"))),
    env(ev.RebootDetected("boot-a", "boot-b")),
    env(ev.StepFinished("drivers", True, "nvidia 580 loaded")),
    env(ev.RunStopped(StopReason.PAUSED, "checked after the reboot", None)),
]


def test_a_reboot_request_is_the_ending_until_the_next_runner_starts() -> None:
    before = view_of(BEFORE_REBOOT)
    assert before.ending == RebootAsked("reboot", "boot-a", "the driver loads at boot")
    assert before.status("drivers") == "awaiting_reboot" and not before.running
    after = view_of(CHECK_AFTER_REBOOT, start=before)
    assert after.ending == Stopped(StopReason.PAUSED, "checked after the reboot", None)
    assert after.invocation == 2 and after.rebooted
    assert [e.step for e in after.checked] == ["drivers"]


def test_a_new_invocation_clears_the_ending_and_what_it_checked() -> None:
    view = view_of(
        [*BEFORE_REBOOT, *CHECK_AFTER_REBOOT, env(ev.RunStarted("run-1", 300, "boot-b", ()))]
    )
    assert view.ending is None and view.running
    assert view.checked == () and not view.rebooted


def test_the_step_keeps_its_start_time_and_the_run_its_tail() -> None:
    view = view_of(BEFORE_REBOOT[:4])
    assert view.steps["drivers"].started == "2026-12-03T10:00:01.000+00:00"
    assert view.current == "drivers" and view.command == "apt-get install nvidia-driver"
    assert view.tail == ("Setting up nvidia-driver ...",)


def test_finished_and_failed_endings() -> None:
    done = view_of(
        [env(ev.RunStarted("r", 1, None, ())), env(ev.RunFinished(True, "every step is done"))]
    )
    assert done.ending == Finished(True, "every step is done")
    failed = view_of(
        [
            env(ev.RunStarted("r", 1, None, ("a",))),
            env(ev.StepFinished("a", False, "exit status 100")),
            env(ev.RunStopped(StopReason.FAILED, "exit status 100", "a")),
        ]
    )
    assert failed.ending == Stopped(StopReason.FAILED, "exit status 100", "a")
    assert failed.status("a") == "failed" and failed.steps["a"].reason == "exit status 100"


EVENTS_ALPHABET = [*BEFORE_REBOOT, *CHECK_AFTER_REBOOT]


@given(st.lists(st.sampled_from(EVENTS_ALPHABET), max_size=30), st.integers(0, 30))
def test_folding_in_two_parts_is_folding_at_once(events: list[ev.Envelope], cut: int) -> None:
    """Attaching mid-way and replaying the rest shows what replaying all of it shows."""
    assert view_of(events[cut:], start=view_of(events[:cut])) == view_of(events)


@given(st.lists(st.sampled_from(EVENTS_ALPHABET), min_size=1, max_size=30))
def test_the_ending_belongs_to_the_newest_invocation(events: list[ev.Envelope]) -> None:
    view = view_of(events)
    starts = [i for i, e in enumerate(events) if isinstance(e.event, ev.RunStarted)]
    if starts and isinstance(view.ending, RebootAsked):
        newest = events[starts[-1] :]
        assert any(isinstance(e.event, ev.RebootRequested) for e in newest)


def test_a_real_run_replayed_after_its_reboot_check_does_not_ask_for_the_reboot_again(
    tmp_path: Path,
) -> None:
    """The events.jsonl of a simulated install, replayed whole: the journal says no reboot is
    pending, and the view agrees at every prefix after the check's RunStarted."""
    profile = "h100x8-ubuntu2204-fresh"
    assert gpuwizard(tmp_path, "--simulate", profile, "apply", "--yes").returncode == 10
    assert gpuwizard(tmp_path, "--simulate", profile, "apply", "--yes").returncode == 0
    state = place_for(profile, tmp_path / "gpuwizard").state_dir
    assert Journal.load(state / JOURNAL).data.reboot is None
    envelopes = [ev.decode(line) for line in (state / EVENTS).read_text().splitlines()]
    starts = [i for i, e in enumerate(envelopes) if isinstance(e.event, ev.RunStarted)]
    assert len(starts) >= 2
    view = RunView()
    for index, envelope in enumerate(envelopes):
        view = fold(view, envelope)
        if index >= starts[1]:
            assert not isinstance(view.ending, RebootAsked), envelope
    assert view.ending == Finished(True, "every step is done")
