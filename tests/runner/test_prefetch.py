"""The runner's side of fetching ahead (wizard/runner/prefetch.py ``Ahead``): when it starts the
fetching process, how long it waits, and what it says. The process's lock is a real OFD lock taken
by this test; time is a fake clock."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpuwizard.core.request import SetupRequest
from gpuwizard.runner import events as ev
from gpuwizard.runner.journal import Journal, new_journal
from gpuwizard.runner.lock import RunnerLock
from gpuwizard.runner.prefetch import LOCK, LOG_ID, QUIET_S, Ahead, AheadRecord
from gpuwizard.setup.plan import make_plan
from tests.conftest import facts_of


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def journal(tmp_path: Path, table):
    plan, selection = make_plan(table, facts_of("t4-debian12-fresh"), SetupRequest())
    return Journal.create(tmp_path / "journal.json", new_journal("run-test", plan, selection)).data


def ahead(tmp_path: Path, clock: Clock, launched: list[object]) -> Ahead:
    return Ahead(
        tmp_path,
        ("fetch",),
        launched.append,
        sleep=clock.sleep,
        clock=lambda: clock.now,
        wall=lambda: clock.now,
    )


def fetching_torch(tmp_path: Path, journal, clock: Clock) -> RunnerLock:  # type: ignore[no-untyped-def]
    """The fetching process at work on install-torch's wheels: its lock held, its record and its
    log written now."""
    lock = RunnerLock(tmp_path, LOCK)
    lock.acquire()
    AheadRecord(journal.run_id, {"install-torch": ("started", "PyTorch's wheels")}).save(tmp_path)
    log = tmp_path / "logs" / journal.run_id / f"{LOG_ID}.log"
    log.parent.mkdir(parents=True)
    log.write_text("Downloading torch\n")
    os.utime(log, (clock.now, clock.now))
    return lock


def test_one_round_at_a_time_and_none_where_nothing_is_left(tmp_path, journal):
    clock, launched = Clock(), []
    runner = ahead(tmp_path, clock, launched)

    events = list(runner.start(journal))
    assert launched == [("fetch",)]
    assert [e.state for e in events] == ["started"] and "install-torch" in events[0].detail

    lock = RunnerLock(tmp_path, LOCK)
    lock.acquire()  # the process is at work: no second one
    assert list(runner.start(journal)) == [] and len(launched) == 1
    lock.release()

    done = {"create-env": ("done", "pip"), "install-torch": ("done", "PyTorch's wheels")}
    record = AheadRecord(journal.run_id, done)
    record.save(tmp_path)  # everything fetched: nothing to start
    assert list(runner.start(journal)) == [] and len(launched) == 1


def test_a_step_waits_while_its_downloads_come_and_hears_how_they_ended(tmp_path, journal):
    clock, launched = Clock(), []
    runner = ahead(tmp_path, clock, launched)
    lock = fetching_torch(tmp_path, journal, clock)
    ended = {"after": 3}

    def sleep(seconds: float) -> None:  # the fetch ends after three polls
        clock.sleep(seconds)
        ended["after"] -= 1
        if ended["after"] == 0:
            AheadRecord(journal.run_id, {"install-torch": ("done", "PyTorch's wheels")}).save(
                tmp_path
            )

    runner.sleep = sleep
    events = list(runner.before_step(journal, "install-torch"))
    lock.release()

    assert [(e.state, e.step) for e in events] == [
        ("waiting", "install-torch"),
        ("done", "install-torch"),
    ]
    assert list(runner.report(journal)) == []  # said once


def test_a_fetch_gone_quiet_is_not_waited_for(tmp_path, journal):
    clock, launched = Clock(), []
    runner = ahead(tmp_path, clock, launched)
    lock = fetching_torch(tmp_path, journal, clock)

    events = list(runner.wait(journal.run_id, lambda: True, "install-torch", "waiting"))
    lock.release()

    assert [e.state for e in events] == ["waiting", "failed"]
    assert "no progress for 2 minutes" in events[-1].detail
    assert QUIET_S <= clock.now - 1_000_000.0 <= QUIET_S + 1


def test_without_a_command_nothing_is_started_or_waited_for(tmp_path, journal):
    runner = Ahead(tmp_path, None, lambda _command: pytest.fail("launched"))
    assert list(runner.before_step(journal, "install-torch")) == []
    assert list(runner.before_reboot(journal)) == []


def test_the_front_ends_say_each_state_in_one_line():
    from gpuwizard.runner.view import ahead_line

    lines = [
        ahead_line(
            ev.FetchedAhead("started", None, "fetching later steps' downloads meanwhile: x")
        ),
        ahead_line(ev.FetchedAhead("done", "install-torch", "PyTorch's wheels")),
        ahead_line(
            ev.FetchedAhead("failed", "install-torch", "404; its step downloads them itself")
        ),
    ]
    assert lines == [
        "ahead: fetching later steps' downloads meanwhile: x",
        "ahead: install-torch's downloads are in the cache (PyTorch's wheels)",
        "ahead: fetching for install-torch failed: 404; its step downloads them itself",
    ]


def test_a_download_two_items_share_is_fetched_once_a_round_and_the_scratch_target_goes(tmp_path):
    from gpuwizard.core.ahead import AHEAD_DIR, UV_TARGET, AheadItem
    from gpuwizard.core.ops import Download, Sha256, UvPrefetch
    from gpuwizard.runner.executor import Outcome
    from gpuwizard.runner.prefetch import fetch_item

    class Host:
        def path(self, absolute: str) -> Path:
            return tmp_path / absolute.lstrip("/")

    ran: list[object] = []

    def executor(_log: str, op: object) -> Outcome:
        ran.append(op)
        if isinstance(op, UvPrefetch):
            assert Host().path(UV_TARGET).parent.is_dir()
            Host().path(UV_TARGET).mkdir()  # uv fills it
        return Outcome(True, "ok")

    uv = Download("pypi:uv==1", f"{AHEAD_DIR}/uv", Sha256("0" * 64), member="uv")
    pip = UvPrefetch(f"{AHEAD_DIR}/uv", "/usr/bin/python3", "3.11", UV_TARGET, ("pip==1",))
    torch = UvPrefetch(f"{AHEAD_DIR}/uv", "/usr/bin/python3", "3.11", UV_TARGET, ("torch==1",))
    fetched: set[object] = set()

    assert fetch_item(Host(), executor, AheadItem("create-env", (uv, pip)), fetched)[0] == "done"  # type: ignore[arg-type]
    assert (
        fetch_item(Host(), executor, AheadItem("install-torch", (uv, torch)), fetched)[0] == "done"
    )  # type: ignore[arg-type]

    assert ran == [uv, pip, torch]
    assert not Host().path(UV_TARGET).exists()


def test_at_the_end_of_the_run_the_fetching_process_is_ended_and_waited_for(tmp_path):
    import subprocess
    import sys
    import time

    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path\n"
         "from gpuwizard.runner.lock import RunnerLock\n"
         "lock = RunnerLock(Path(sys.argv[1]), 'ahead.lock'); lock.acquire(); print('held', flush=True)\n"
         "time.sleep(60)", str(tmp_path)],
        stdout=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    runner = Ahead(tmp_path, ("fetch",), lambda _command: None)
    assert runner.running()

    started = time.monotonic()
    runner.stop()

    assert not runner.running() and holder.wait(timeout=10) != 0
    assert time.monotonic() - started < 10
