"""Losing the terminal and finding the runner again (reliability.md §9, T09-T11, T13, T14).

The front end here is ``gpuwizard apply``, which shares the launcher, run record, lock and event
follower with the TUI: it runs in a real pseudo-terminal that the test hangs up or kills, while
the detached runner carries on. A second front end must attach, never start a second runner; a
stale run record or events file must never be taken at its word.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pexpect
import pytest

from gpuwizard.runner import events as ev
from gpuwizard.runner.control import current
from gpuwizard.runner.follow import BadLine, EventFollower, Restarted
from gpuwizard.runner.layout import EVENTS, EXIT_DONE, EXIT_FAILED, EXIT_REBOOT
from gpuwizard.runner.lock import RunRecord, process_start_ticks, runner_status, write_run_record
from tests.sim.conftest import GPUWIZARD, H100, WAIT_S, wait_for

SLOW_APT = {
    "tool": "apt-get",
    "match": "nvidia-driver",
    "times": 1,
    "output": "Unpacking nvidia-driver-580-server-open (580.95.05-0ubuntu1) ...",
    "sleep_s": 2,
}


def apply_in_a_terminal(host) -> pexpect.spawn[bytes]:
    """``gpuwizard apply --yes`` in a pseudo-terminal, as over SSH; returns once apt is at work."""
    terminal = pexpect.spawn(
        sys.executable,
        [*GPUWIZARD[1:], "apply", "--yes", "--simulate", host.profile],
        env=host.cli_env(),
        timeout=WAIT_S,
    )
    host.terminals.append(terminal)
    terminal.expect("install nvidia-driver-580-server-open")
    wait_for(lambda: host.state().dpkg_interrupted, "apt to be at work")
    return terminal


def runner_alive(host) -> bool:
    return runner_status(host.state_dir, host.facts().boot.boot_id) == "running"


@pytest.mark.slow
def test_t09_a_hangup_of_the_front_end_mid_apt_leaves_the_runner_at_work_and_a_new_one_reattaches(
    sim,
):
    host = sim(H100)
    host.scenario(rules=[SLOW_APT])
    terminal = apply_in_a_terminal(host)

    terminal.close(force=True)  # the SSH connection drops: the pty's session gets SIGHUP

    assert runner_alive(host), "the runner outlives its front end"
    reattach_and_finish(host)


@pytest.mark.slow
def test_t10_a_front_end_killed_mid_apt_leaves_the_runner_at_work_and_blocks_no_relaunch(sim):
    host = sim(H100)
    host.scenario(rules=[SLOW_APT])
    terminal = apply_in_a_terminal(host)

    os.kill(terminal.pid, signal.SIGKILL)
    terminal.close(force=True)

    assert runner_alive(host), "the runner outlives its front end"
    reattach_and_finish(host)


def reattach_and_finish(host) -> None:
    """A new ``gpuwizard apply`` replays the whole history, follows the runner, then finishes."""
    again = host.cli("apply", "--yes")  # lock and run record of the dead front end do not block

    assert again.returncode == EXIT_REBOOT, again.stdout + again.stderr
    assert "A runner is already at work" in again.stdout
    assert "==> Disable the nouveau driver" in again.stdout, "the whole history is replayed"
    assert "done: install-nvidia-driver" in again.stdout, "and the live progress followed"
    log = host.state_dir / "logs" / host.journal().run_id / "install-nvidia-driver.log"
    assert "Unpacking nvidia-driver-580-server-open" in log.read_text()
    assert host.cli("apply", "--yes").returncode == EXIT_DONE


def test_t11_a_second_front_end_started_at_the_same_time_watches_or_is_refused_and_never_starts_a_second_apt(
    sim,
):
    host = sim(H100)
    host.scenario(rules=[{**SLOW_APT, "sleep_s": 2}])
    command = [*GPUWIZARD, "apply", "--yes", "--simulate", host.profile]

    def start() -> subprocess.Popen[bytes]:
        front = subprocess.Popen(
            command,
            env=host.cli_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        host.processes.append(front)
        return front

    first = start()
    time.sleep(0.1)  # the case itself: two people type the command 100 ms apart
    second = start()
    outputs = [front.communicate(timeout=WAIT_S)[0].decode() for front in (first, second)]

    installs = [call for call in host.calls() if "nvidia-driver-580-server-open" in call.argv]
    assert len(installs) == 1, outputs
    starts = host.events_of(ev.RunStarted)
    assert len({s.run_id for s in starts}) == 1, "one run"
    assert len(starts) == 2, "its runner, then the reboot the driving front end confirmed"
    assert not list(host.state_dir.glob("journal-before-*")), "no run replaced another"
    codes = sorted([first.returncode, second.returncode])
    watched = sum("Another gpuwizard drives the setup" in output for output in outputs)
    refused = sum("another gpuwizard is setting up this machine" in output for output in outputs)
    # The first to look drives; the second watches its run, or, when it looked before there
    # was a run to watch, is refused naming the first. It never decides anything itself.
    assert (codes, watched, refused) in (
        ([EXIT_REBOOT, EXIT_REBOOT], 1, 0),
        ([EXIT_FAILED, EXIT_REBOOT], 0, 1),
    ), outputs


def test_t13_a_reused_pid_in_the_run_record_is_not_taken_for_the_runner(sim):
    host = sim(H100)
    host.plan()
    assert host.run() == EXIT_REBOOT
    stranger = subprocess.Popen(["sleep", "1000"])
    try:
        ticks = process_start_ticks(stranger.pid)
        # A live process with the very pid and start time, but recorded in an earlier boot.
        write_run_record(
            host.state_dir,
            RunRecord(stranger.pid, ticks, str(uuid.uuid4()), "2026-01-01T00:00:00+00:00"),
        )
        boot_id = host.facts().boot.boot_id

        assert runner_status(host.state_dir, boot_id) == "interrupted"
        assert current(host.state_dir, boot_id).status == "interrupted"
        host.backend.reboot()  # a confirmed reboot kills "the runner" in run.json: not this one
        assert stranger.poll() is None

        resumed = host.cli("apply", "--yes")
        assert resumed.returncode == EXIT_DONE, resumed.stdout + resumed.stderr
        assert "Continuing the unfinished setup" in resumed.stdout
        assert "already at work" not in resumed.stdout
    finally:
        stranger.kill()
        stranger.wait()


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param("deleted", id="deleted"),
        pytest.param("truncated", id="truncated mid-line"),
        pytest.param("rotated", id="rotated (moved aside, a new one started)"),
    ],
)
def test_t14_a_damaged_events_file_at_reattach_restarts_from_zero_with_a_notice(sim, damage):
    host = sim(H100)
    host.plan()
    assert host.run() == EXIT_REBOOT
    events = host.state_dir / EVENTS
    follower = EventFollower(events)
    assert follower.poll()
    if damage == "deleted":
        events.unlink()
        assert follower.poll() == [], "a missing file is no crash"
    elif damage == "truncated":
        with events.open("r+b") as handle:
            handle.truncate(40)
    else:
        events.rename(events.with_name("events-rotated.jsonl"))

    host.reboot()
    assert host.run() == EXIT_DONE

    items = follower.poll()
    assert isinstance(items[0], Restarted)
    assert items[-1].event.KIND == "run-finished"
    assert sum(isinstance(item, BadLine) for item in items) <= 1, "at most the torn line"


def test_t14_a_saved_offset_past_the_end_of_the_events_file_is_clamped(sim):
    host = sim(H100)
    host.plan()
    assert host.run() == EXIT_REBOOT
    events = host.state_dir / EVENTS

    follower = EventFollower(events, offset=events.stat().st_size + 4096)  # from a longer file
    items = follower.poll()

    assert isinstance(items[0], Restarted)
    assert len(items) - 1 == len(events.read_text().splitlines())
