"""Which boot is this? The boot_id, else /proc/stat's btime, else "cannot judge" (issue 14).

A container may have no /proc/sys/kernel/random/boot_id, or it may be unreadable (EACCES). That
must never read as "the runner ended" or "the reboot happened": the runner falls back to the
boot time in /proc/stat, says which signal it used (the journal's reboot record, the events,
what the front ends show), and with neither readable the person's answer judges it (kept in the
journal with when and which front end); without an answer it stops and says how to give one.
The simulated host hides the boot_id with the ``boot_id_hidden`` scenario.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gpuwizard.core.facts import BTIME_SLACK_S, BootJudgement, BootMark, judge_boot
from gpuwizard.machine.detect.platform import parse_btime
from gpuwizard.runner import events as ev
from gpuwizard.runner.layout import EVENTS, EXIT_DONE, EXIT_PAUSED, EXIT_REBOOT, EXIT_STOPPED
from gpuwizard.runner.lock import RunRecord, process_start_ticks, runner_status, write_run_record
from gpuwizard.runner.loop import PersonAnswer
from gpuwizard.runner.session import SessionOptions
from gpuwizard.runner.view import view_of
from gpuwizard.screens.resume import resume_text
from tests.sim.conftest import H100

A = "6b1f0e4c-1d2a-4c3b-9e8f-0a1b2c3d4e5f"
B = "0f9e8d7c-6b5a-4c3d-8e2f-1a0b9c8d7e6f"
T0 = 1_780_000_000
STAT = f"cpu  10 0 10 1000 0 0 0 0 0 0\nintr 0\nctxt 0\nbtime {T0}\nprocesses 1\n"


# ------------------------------------------------------------------------------ the judgement
@pytest.mark.parametrize(
    ("before", "now", "judged"),
    [
        pytest.param(BootMark(A, T0), BootMark(A, T0 + 1), BootJudgement(True, "boot_id"), id="boot_id: same"),
        pytest.param(BootMark(A, T0), BootMark(B, T0), BootJudgement(False, "boot_id"), id="boot_id decides over btime"),
        pytest.param(BootMark(None, T0), BootMark(B, T0 + 600), BootJudgement(False, "btime"), id="boot_id unreadable before, btime later"),
        pytest.param(BootMark(A, T0), BootMark(None, T0 + 600), BootJudgement(False, "btime"), id="boot_id unreadable now, btime later"),
        pytest.param(BootMark(None, T0), BootMark(None, T0 + BTIME_SLACK_S), BootJudgement(True, "btime"), id="btime within the slack: same boot"),
        pytest.param(BootMark(None, T0), BootMark(None, T0 - 600), BootJudgement(None, "btime"), id="btime moved back: the clock, not a boot"),
        pytest.param(BootMark(None, T0), BootMark(None, None), BootJudgement(None, None), id="neither readable now"),
        pytest.param(BootMark(None, None), BootMark(B, T0), BootJudgement(None, None), id="neither readable before"),
    ],
)  # fmt: skip
def test_a_boot_is_judged_by_the_boot_id_else_btime_never_by_a_guess(before, now, judged):
    assert judge_boot(before, now) == judged


def test_btime_is_read_from_its_line_of_proc_stat_only():
    assert parse_btime(STAT) == T0
    assert parse_btime("cpu 1 2 3\nbtime\n") is None
    assert parse_btime("") is None and parse_btime(None) is None


# ------------------------------------------------------------------- the runner is not "ended"
def test_an_unreadable_boot_id_never_makes_a_live_runner_look_ended(tmp_path: Path):
    pid = os.getpid()
    record = RunRecord(pid, process_start_ticks(pid), None, "2026-12-03T08:00:00+00:00", btime=T0)
    write_run_record(tmp_path, record)

    assert runner_status(tmp_path, BootMark(None, T0)) == "running", "same boot by btime"
    assert runner_status(tmp_path, BootMark(None, None)) == "running", "cannot judge: pid decides"
    assert runner_status(tmp_path, BootMark(None, T0 + 600)) == "interrupted", "another boot"
    assert runner_status(tmp_path, BootMark(B, T0 + 600)) == "interrupted"


# --------------------------------------------------------------------- against the simulation
def hide_boot_id(host, *, btime: bool) -> None:
    host.scenario(boot_id_hidden=True)
    if btime:
        host.path("/proc/stat").write_text(STAT)


def test_with_the_boot_id_readable_it_decides_and_says_so(sim):
    host = sim(H100)
    host.path("/proc/stat").write_text(STAT)
    host.plan()

    assert host.run() == EXIT_REBOOT
    assert host.journal().reboot.signal == "boot_id"
    host.reboot()
    assert host.run() == EXIT_DONE

    detected = host.events_of(ev.RebootDetected)
    assert [d.signal for d in detected] == ["boot_id"]
    assert detected[0].boot_id_before != detected[0].boot_id_now


def test_boot_id_hidden_the_reboot_is_judged_by_btime_and_the_journal_and_views_say_so(sim):
    host = sim(H100)
    hide_boot_id(host, btime=True)
    host.plan()

    assert host.run() == EXIT_REBOOT
    pending = host.journal().reboot
    assert (pending.boot_id_before, pending.btime_before, pending.signal) == (None, T0, "btime")
    assert host.events_of(ev.RebootRequested)[-1].signal == "btime"

    assert host.run() == EXIT_REBOOT, "not rebooted: btime unchanged, offered again"
    assert not host.events_of(ev.RebootDetected)
    assert host.step_states()["blacklist-nouveau"] == "awaiting_reboot"

    host.reboot()
    assert host.run() == EXIT_DONE

    [detected] = host.events_of(ev.RebootDetected)
    assert detected.signal == "btime" and detected.boot_id_now is None
    assert detected.btime_now is not None and detected.btime_now > T0 + BTIME_SLACK_S
    lines = (host.state_dir / EVENTS).read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if '"reboot-detected"' in line)
    assert view_of(ev.decode(line) for line in lines[: at + 1]).rebooted_by == "btime"
    heading = str(resume_text((), None, True, None, "btime")[0])
    assert "judged by the boot time in /proc/stat" in heading


def test_boot_id_lost_after_the_request_btime_still_judges(sim):
    host = sim(H100)
    host.path("/proc/stat").write_text(STAT)
    host.plan()
    assert host.run() == EXIT_REBOOT
    host.reboot()
    host.scenario(boot_id_hidden=True)  # e.g. a permission change at the next boot

    assert host.run() == EXIT_DONE

    assert [d.signal for d in host.events_of(ev.RebootDetected)] == ["btime"]


def hide_both(host) -> None:
    hide_boot_id(host, btime=False)
    host.path("/proc/stat").unlink(missing_ok=True)


def test_neither_readable_the_reboot_is_asked_for_to_be_judged_by_the_person(sim):
    host = sim(H100)
    hide_both(host)
    host.plan()

    assert host.run() == EXIT_REBOOT

    pending = host.journal().reboot
    assert pending is not None
    assert (pending.boot_id_before, pending.btime_before, pending.signal) == (None, None, "person")
    assert host.events_of(ev.RebootRequested)[-1].signal == "person"


def test_neither_readable_without_an_answer_the_runner_stops_and_says_how_to_give_one(sim):
    host = sim(H100)
    host.path("/proc/stat").write_text(STAT)
    host.plan()
    assert host.run() == EXIT_REBOOT
    host.reboot()
    hide_both(host)
    calls = len(host.calls())

    assert host.run() == EXIT_STOPPED

    assert not host.events_of(ev.RebootDetected)
    stopped = host.events_of(ev.RunStopped)[-1]
    assert stopped.reason == "boot-unknown"
    assert stopped.why.startswith("cannot judge the reboot: neither the boot_id nor the boot time")
    assert "check (uptime, who -b), then answer whether it restarted" in stopped.why
    assert "--rebooted yes or no" in stopped.why
    assert host.step_states()["blacklist-nouveau"] == "awaiting_reboot", "not verified on a guess"
    assert len(host.calls()) == calls
    assert host.journal().boot_answers == ()


def test_the_persons_yes_judges_the_reboot_and_the_journal_keeps_it(sim):
    host = sim(H100)
    hide_both(host)
    host.plan()
    assert host.run() == EXIT_REBOOT
    requested_at = host.journal().reboot.requested_at
    host.reboot()

    said = SessionOptions(check_only=True, answer=PersonAnswer(True, "apply"))
    assert host.run(said) == EXIT_PAUSED

    [detected] = host.events_of(ev.RebootDetected)
    assert detected.signal == "person"
    journal = host.journal()
    assert journal.reboot is None
    assert host.step_states()["blacklist-nouveau"] == "done", "verified after the answer"
    [answer] = journal.boot_answers
    assert (answer.step, answer.rebooted, answer.since, answer.front_end) == (
        "reboot",
        True,
        requested_at,
        "apply",
    )
    assert answer.answered_at >= requested_at
    assert host.run() == EXIT_DONE, "the rest runs; nobody is asked again"
    assert len(host.journal().boot_answers) == 1


def test_the_persons_no_offers_the_reboot_again_and_says_who_said_so(sim):
    host = sim(H100)
    hide_both(host)
    host.plan()
    assert host.run() == EXIT_REBOOT

    said = SessionOptions(answer=PersonAnswer(False, "tui"))
    assert host.run(said) == EXIT_REBOOT

    assert not host.events_of(ev.RebootDetected)
    requested = host.events_of(ev.RebootRequested)
    assert len(requested) == 2 and requested[-1].reason.startswith(
        "the reboot did not happen (you said the machine has not restarted); still:"
    )
    assert [(a.rebooted, a.front_end) for a in host.journal().boot_answers] == [(False, "tui")]
    assert host.journal().reboot.attempt == 1, "a reboot that never happened is no cycle"


def test_a_boot_signal_outweighs_the_persons_answer(sim):
    host = sim(H100)
    host.path("/proc/stat").write_text(STAT)
    host.plan()
    assert host.run() == EXIT_REBOOT  # not rebooted: the boot_id is unchanged

    assert host.run(SessionOptions(answer=PersonAnswer(True, "apply"))) == EXIT_REBOOT

    assert not host.events_of(ev.RebootDetected)
    assert host.journal().boot_answers == ()


def test_apply_through_a_hidden_boot_id_reboots_once_and_says_what_judged_it(sim):
    host = sim(H100)
    hide_boot_id(host, btime=True)
    started = time.monotonic()

    first = host.cli("apply", "--yes")
    second = host.cli("apply", "--yes")

    assert (first.returncode, second.returncode) == (EXIT_REBOOT, EXIT_DONE), (
        second.stdout + second.stderr
    )
    assert "the machine rebooted (judged by the boot time in /proc/stat" in second.stdout
    assert host.commands()[("reboot",)] == 1
    assert time.monotonic() - started < 120


def test_apply_without_a_signal_asks_by_flag_and_keeps_the_answer(sim):
    host = sim(H100)
    hide_both(host)
    host.plan()
    assert host.run() == EXIT_REBOOT  # asked for; this machine has not restarted

    unanswered = host.cli("apply", "--yes")
    denied = host.cli(
        "apply", "--yes", "--rebooted", "no"
    )  # true: offered again, and --yes reboots
    relaunched = host.cli("apply", "--yes")
    said = host.cli("apply", "--yes", "--rebooted", "yes")
    again = host.cli("apply", "--yes", "--rebooted", "yes")

    assert unanswered.returncode == 2, unanswered.stdout + unanswered.stderr
    [line] = unanswered.stderr.splitlines()
    assert line.startswith("gpuwizard: cannot tell whether this machine restarted since 20")
    assert line.endswith("run the same command with --rebooted yes or --rebooted no")
    assert denied.returncode == EXIT_REBOOT, denied.stdout + denied.stderr
    assert "you said the machine has not restarted: the reboot is asked for again" in denied.stdout
    assert relaunched.returncode == 2, "after the reboot it asked for, the question is asked again"
    assert said.returncode == EXIT_DONE, said.stdout + said.stderr
    assert "the machine rebooted (as you said: neither the boot_id nor the boot time" in said.stdout
    answers = host.journal().boot_answers
    assert [(a.rebooted, a.front_end) for a in answers] == [(False, "apply"), (True, "apply")]
    assert again.returncode == 2 and "no reboot waits here: drop it" in again.stderr
    assert host.commands()[("reboot",)] == 1
