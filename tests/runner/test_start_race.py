"""Two runners started at the same moment on one state folder: the second finds the first at work
and leaves without touching its files (issue 14: the lock is taken before the stale-temp clean-up).

In-process and fast: each iteration prepares a run of an empty plan over an empty root (no
detection worth the name, no tools), then starts two ``run_session`` threads behind a barrier,
the second a random fraction of a millisecond later. Every atomic save sleeps a little between
writing its temp file and renaming it (the ``state.after_tmp_write`` failpoint), which keeps the
live runner's temp files in place long enough for a clean-up that runs too early to delete one:
the rename then fails and the live run stops on a JournalError. The run that got the lock must
end done, with a journal that parses strictly and an events file whose every line decodes.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gpuwizard.core.facts import NvmlUnavailable
from gpuwizard.core.plan import SCHEMA, Plan
from gpuwizard.machine.host import MISSING_TOOL, Host, Output
from gpuwizard.runner import events as ev
from gpuwizard.runner.executor import Tools
from gpuwizard.runner.failpoints import ENV as FAILPOINTS
from gpuwizard.runner.files import TEMP_PREFIX, remove_stale_temps
from gpuwizard.runner.journal import Journal, new_journal, parse
from gpuwizard.runner.layout import EVENTS, EXIT_BUSY, EXIT_DONE, JOURNAL, save_planned_facts
from gpuwizard.runner.lock import RunnerLock
from gpuwizard.runner.session import run_session
from tests.export.conftest import source_for

ITERATIONS = 200


def _no_command(argv: object, *, timeout_s: float = 10.0) -> Output:
    del argv, timeout_s
    return Output(MISSING_TOOL, "")


def empty_host(root: Path) -> Host:
    root.mkdir(parents=True, exist_ok=True)
    return Host(root=root, run=_no_command, nvml=lambda: NvmlUnavailable("no driver here"))


def prepare(state_dir: Path) -> None:
    source = source_for("h100x8-ubuntu2204-fresh")
    plan = Plan(SCHEMA, ())
    save_planned_facts(state_dir, source.facts)
    Journal.create(state_dir / JOURNAL, new_journal("run-race", plan, source.selection))


def start_two(state_dir: Path, host: Host, delay_s: float) -> list[int]:
    """Both runners, released together; the second ``delay_s`` later. Their exit codes."""
    barrier = threading.Barrier(2)
    codes: list[int] = []
    failures: list[BaseException] = []

    def runner(wait_s: float) -> None:
        barrier.wait()
        if wait_s:
            threading.Event().wait(wait_s)
        try:
            codes.append(run_session(lambda: host, Tools(), state_dir))
        except BaseException as error:  # a crash must fail the test, not vanish with the thread
            failures.append(error)

    threads = [threading.Thread(target=runner, args=(wait,)) for wait in (0.0, delay_s)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not failures, failures
    return codes


def test_a_second_runner_started_at_once_never_harms_the_live_runs_journal_or_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FAILPOINTS, "state.after_tmp_write=sleep(1)")
    host = empty_host(tmp_path / "root")
    rng = random.Random(14)
    busy = 0
    for iteration in range(ITERATIONS):
        state_dir = tmp_path / f"state-{iteration}"
        state_dir.mkdir(mode=0o700)
        prepare(state_dir)

        codes = start_two(state_dir, host, rng.uniform(0, 0.004))

        assert sorted(codes) in ([EXIT_DONE, EXIT_BUSY], [EXIT_DONE, EXIT_DONE]), (
            f"iteration {iteration}: {codes}; {(state_dir / 'runner-error.txt').exists()=}"
        )
        busy += EXIT_BUSY in codes
        journal = parse((state_dir / JOURNAL).read_text(encoding="utf-8"))
        assert journal.finished and journal.run_id == "run-race"
        lines = (state_dir / EVENTS).read_text(encoding="utf-8").splitlines()
        decoded = [ev.decode(line) for line in lines]
        assert [e.seq for e in decoded] == list(range(1, len(decoded) + 1))
        assert not any(isinstance(e.event, ev.RunStopped) for e in decoded), lines
        assert isinstance(decoded[-1].event, ev.RunFinished)
        assert not list(state_dir.glob(f"{TEMP_PREFIX}*")), "no temp file is left behind"
    assert busy >= ITERATIONS // 2, f"only {busy} of {ITERATIONS} starts overlapped"


def test_a_runner_that_finds_the_lock_taken_cleans_nothing(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    prepare(state_dir)
    stale = state_dir / f"{TEMP_PREFIX}left-by-a-crash"
    stale.write_text("torn")
    live = RunnerLock(state_dir)
    live.acquire()
    try:
        assert run_session(lambda: empty_host(tmp_path / "root"), Tools(), state_dir) == EXIT_BUSY
    finally:
        live.release()
    assert stale.exists(), "only the lock holder cleans up"

    assert run_session(lambda: empty_host(tmp_path / "root"), Tools(), state_dir) == EXIT_DONE
    assert not stale.exists(), "the next runner that holds the lock does"


def test_only_the_temp_files_of_writers_that_are_gone_are_stale(tmp_path: Path) -> None:
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)  # fmt: skip
        live = tmp_path / f"{TEMP_PREFIX}{writer.pid}.abc123"
        dead = tmp_path / f"{TEMP_PREFIX}{gone.stdout.strip()}.def456"
        legacy = tmp_path / f"{TEMP_PREFIX}xyz789"
        for path in (live, dead, legacy):
            path.write_text("partial")

        assert remove_stale_temps(tmp_path) == 2

        assert live.exists(), "a live writer is about to rename it into place"
        assert not dead.exists() and not legacy.exists()
    finally:
        writer.kill()
        writer.wait()
