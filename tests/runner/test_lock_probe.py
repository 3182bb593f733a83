"""Asking whether a runner is at work must never make a runner that starts at that instant leave
"busy" (issue 14). ``RunnerLock.is_held_elsewhere()`` used to take the lock for a moment to see
whether it could; a runner whose start met that moment exited EXIT_BUSY with nobody at work.

The probe now asks the kernel who holds the lock (F_OFD_GETLK on the runner's open-file-
description lock) without taking it. The race test runs a probe loop in another process, as
fast as it can, against many lock takes and runner starts one after the other: every one must
get the lock.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuwizard.runner.executor import Tools
from gpuwizard.runner.layout import EXIT_BUSY, EXIT_DONE
from gpuwizard.runner.lock import AlreadyRunning, RunnerLock
from gpuwizard.runner.session import run_session
from tests.runner.test_start_race import empty_host, prepare

STARTS = 100
"""Whole runner sessions (journal, events, run.json) while the probes loop."""
TAKES = 20_000
"""Lock acquisitions alone, the instant a starting runner can meet a probe, while they loop."""
PROBES = 2

PROBE_LOOP = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from gpuwizard.runner.lock import RunnerLock

    state = Path(sys.argv[1])
    seen = 0
    print("probing", flush=True)
    while not (state / "stop").exists():
        seen += RunnerLock(state).is_held_elsewhere()
    print(seen, flush=True)
    """
)


@contextlib.contextmanager
def probing(state_dir: Path) -> Iterator[list[int]]:
    """Probe loops in other processes while the body runs; how often each saw the lock held."""
    (state_dir / "lock").touch(mode=0o600)  # the probes open it from their first loop on
    probes = [
        subprocess.Popen(
            [sys.executable, "-c", PROBE_LOOP, str(state_dir)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(PROBES)
    ]
    seen: list[int] = []
    try:
        for probe in probes:
            assert probe.stdout is not None and probe.stdout.readline() == "probing\n"
        yield seen
    finally:
        (state_dir / "stop").touch()
        seen += [int(probe.communicate(timeout=30)[0]) for probe in probes]


def test_a_probe_loop_never_makes_a_starting_runner_busy(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    prepare(state_dir)
    host = empty_host(tmp_path / "root")
    busy = 0
    with probing(state_dir) as seen:
        for _ in range(TAKES):
            lock = RunnerLock(state_dir)
            try:
                lock.acquire()
            except AlreadyRunning:
                busy += 1
                continue
            lock.release()
        codes = [run_session(lambda: host, Tools(), state_dir) for _ in range(STARTS)]

    assert busy == 0, f"{busy} of {TAKES} lock takes met a probe and would have left busy"
    assert codes.count(EXIT_BUSY) == 0, f"{codes.count(EXIT_BUSY)} of {STARTS} runners left busy"
    assert codes == [EXIT_DONE] * STARTS
    assert sum(seen) > 0, "the probes saw the lock held: they really overlapped the starts"


def test_the_probe_sees_a_runner_in_another_process_and_in_this_one(tmp_path: Path) -> None:
    assert not RunnerLock(tmp_path).is_held_elsewhere(), "no lock file: nobody"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(
            """
            import sys
            from pathlib import Path
            from gpuwizard.runner.lock import RunnerLock
            lock = RunnerLock(Path(sys.argv[1]))
            lock.acquire()
            print("held", flush=True)
            sys.stdin.read()
            """
        ), str(tmp_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert RunnerLock(tmp_path).is_held_elsewhere()
        with pytest.raises(AlreadyRunning, match=f"pid {holder.pid}"):
            RunnerLock(tmp_path).acquire()
    finally:
        holder.communicate("", timeout=30)
    assert not RunnerLock(tmp_path).is_held_elsewhere(), "the kernel dropped it with its holder"

    mine = RunnerLock(tmp_path)
    mine.acquire()
    try:
        assert RunnerLock(tmp_path).is_held_elsewhere(), "another runner object in this process"
    finally:
        mine.release()
    assert not RunnerLock(tmp_path).is_held_elsewhere()
