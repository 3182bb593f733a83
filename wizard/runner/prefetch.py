"""Fetching ahead: a process beside the runner downloads what later steps need (core/ahead.py).

The runner starts it (``start``) before each step: one process at a time (``ahead.lock``), which
takes the plan from the journal, fetches each later step's downloads in plan order through the
same executor as the steps (its output in the run's ``fetch-ahead.log``), and keeps what each
came to in ``ahead.json``. It runs detached, as the runner does: a TUI that confirms each step
stops the runner between steps, and the downloads go on. Killed, it leaves caches only (each
file lands whole or not at all); the next start fetches what is missing.

The runner never fails a step for it. Before a step whose downloads are still being fetched it
waits for them (a second download of the same wheels would only race the first), and before the
reboot it waits for all, so that after the reboot only installation is left. Each wait and each
result is an event, so the TUI and ``apply`` show them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpuwizard.core.ahead import AHEAD_DIR, AHEAD_MARK, UV_TARGET, AheadItem, AheadOp, ahead
from gpuwizard.core.ops import Download, UvPrefetch
from gpuwizard.core.paths import DOWNLOADS_DIR
from gpuwizard.machine.host import Host
from gpuwizard.runner.events import AheadState, FetchedAhead, RunEvent
from gpuwizard.runner.executor import Executor, Tools
from gpuwizard.runner.files import make_private_dir, write_atomic
from gpuwizard.runner.journal import PASSED_STATES, Journal, JournalData, JournalError
from gpuwizard.runner.layout import JOURNAL
from gpuwizard.runner.lock import AlreadyRunning, RunnerLock

STATE = "ahead.json"
LOCK = "ahead.lock"
LOG_ID = "fetch-ahead"
POLL_S = 0.5
QUIET_S = 120.0
"""A fetch whose log is silent this long is not waited for (downloads print as they go)."""
START_WAIT_S = 10.0
STOP_WAIT_S = 10.0
START_POLL_S = 0.05


def started_steps(journal: JournalData) -> set[str]:
    """Steps that ran or are running: their downloads are theirs now."""
    return {r.id for r in journal.steps if r.state in PASSED_STATES or r.attempts > 0}


def items_for(journal: JournalData, *, next_runs: bool) -> tuple[AheadItem, ...]:
    done = {r.id for r in journal.steps if r.state in PASSED_STATES}
    python = journal.selection.env.python
    return ahead(journal.plan, done, started_steps(journal), python, next_runs=next_runs)


def a_step_runs(journal: JournalData) -> bool:
    return any(r.state == "running" for r in journal.steps)


@dataclass
class AheadRecord:
    """``ahead.json``: each later step's downloads, as far as they came, for one run."""

    run_id: str
    steps: dict[str, tuple[AheadState, str]] = field(default_factory=dict)

    @classmethod
    def load(cls, state_dir: Path, run_id: str) -> AheadRecord:
        try:
            data = json.loads((state_dir / STATE).read_text())
            if data.get("run_id") == run_id:
                steps = {k: (v[0], v[1]) for k, v in data.get("steps", {}).items()}
                return cls(run_id, steps)
        except (OSError, ValueError, TypeError, AttributeError, IndexError, KeyError):
            pass  # none yet, or torn by a crash: what is in the caches is fetched again quickly
        return cls(run_id)

    def state_of(self, step: str) -> AheadState | None:
        return self.steps[step][0] if step in self.steps else None

    def save(self, state_dir: Path) -> None:
        data = {"run_id": self.run_id, "steps": {k: list(v) for k, v in self.steps.items()}}
        write_atomic(state_dir / STATE, json.dumps(data, indent=1).encode(), 0o600)


# ----------------------------------------------------------------------- the fetching process
def run_ahead(host: Host, tools: Tools, state_dir: Path) -> int:
    """Fetch every later step's downloads once; 0 also when another process already does."""
    lock = RunnerLock(state_dir, LOCK)
    try:
        lock.acquire()
    except AlreadyRunning:
        return 0
    signal.signal(signal.SIGTERM, ended)  # stopped: the clean-up below still runs
    downloads = host.path(DOWNLOADS_DIR)
    made = [f for f in (downloads, *downloads.parents) if not f.exists()]  # made for the round
    try:
        return fetch_round(host, tools, state_dir)
    except JournalError as error:  # none, or a new run replaced it: nothing of this round is due
        sys.stderr.write(f"gpuwizard: fetching ahead stopped: {error}\n")
        return 1
    finally:
        # The uv it ran and its scratch target go; what it fetched stays in apt's, uv's and
        # gpuwizard's download caches, where the steps look.
        shutil.rmtree(host.path(AHEAD_DIR), ignore_errors=True)
        for folder in made:  # made for the round and left empty: gone, as before it
            with contextlib.suppress(OSError):
                folder.rmdir()
        lock.release()


def fetch_round(host: Host, tools: Tools, state_dir: Path) -> int:
    """Each later step's downloads not fetched yet, in plan order, the journal read again after
    each; ``ahead.json`` says how each ended."""
    journal = Journal.load(state_dir / JOURNAL).data
    logs = state_dir / "logs" / journal.run_id
    executor = Executor(host, tools, logs, None, lambda *_: None, env={AHEAD_MARK: "1"})
    record = AheadRecord.load(state_dir, journal.run_id)
    tried: set[str] = set()
    fetched: set[AheadOp] = set()  # uv, run by two items, is fetched once a round
    while item := next_item(state_dir, record, tried):
        tried.add(item.step)
        record.steps[item.step] = ("started", item.what)
        record.save(state_dir)
        record.steps[item.step] = fetch_item(host, executor, item, fetched)
        record.save(state_dir)
    return 0


def ended(_signal: int, _frame: object) -> None:
    raise SystemExit(128 + signal.SIGTERM)


def next_item(state_dir: Path, record: AheadRecord, tried: set[str]) -> AheadItem | None:
    """The first later step's downloads not fetched yet, on the journal as it is now: a step
    that added a package source since makes its followers' packages nameable; while no step
    runs, the next one is about to and downloads for itself."""
    journal = Journal.load(state_dir / JOURNAL).data
    if journal.run_id != record.run_id:
        raise JournalError(f"a new run ({journal.run_id}) replaced {record.run_id}")
    for item in items_for(journal, next_runs=not a_step_runs(journal)):
        if item.step not in tried and record.state_of(item.step) != "done":
            return item
    return None


def fetch_item(
    host: Host, executor: Executor, item: AheadItem, fetched: set[AheadOp]
) -> tuple[AheadState, str]:
    for op in item.ops:
        if isinstance(op, Download) and op in fetched:
            continue
        scratch = host.path(UV_TARGET) if isinstance(op, UvPrefetch) else None
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
            make_private_dir(scratch.parent)
        try:
            outcome = executor(LOG_ID, op)
        finally:
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)  # uv's cache keeps the wheels
        if not outcome.ok:
            return "failed", f"{item.what}: {outcome.result}; its step downloads them itself"
        fetched.add(op)
    return "done", item.what


# ------------------------------------------------------------------------- the runner's side
@dataclass
class Ahead:
    """What the runner does about fetching ahead: start it, wait where it must, say what it did."""

    state_dir: Path
    command: Sequence[str] | None
    """The fetching process's command; None: nothing is fetched ahead."""
    launch: Callable[[Sequence[str]], object]
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    said: dict[str, AheadState] = field(default_factory=dict)

    def running(self) -> bool:
        return RunnerLock(self.state_dir, LOCK).is_held_elsewhere()

    def record(self, journal: JournalData) -> AheadRecord:
        return AheadRecord.load(self.state_dir, journal.run_id)

    def start(self, journal: JournalData) -> Generator[RunEvent, None, None]:
        """Start a round where a later step has downloads not yet fetched and none runs."""
        if self.command is None or self.running():
            return
        record = self.record(journal)
        items = items_for(journal, next_runs=True)
        left = [i for i in items if record.state_of(i.step) != "done"]
        if not left:
            return
        process = self.launch(self.command)
        self.until_started(process, journal, [i.step for i in left])
        what = "; ".join(f"{i.step} ({i.what})" for i in left)
        yield FetchedAhead("started", None, f"fetching later steps' downloads meanwhile: {what}")

    def until_started(self, process: object, journal: JournalData, steps: list[str]) -> None:
        """Until the process holds its lock, so that the next step does not start another. Also
        ended by: a launch that failed, a round already over (a fast one), a slow start. Under
        systemd-run the launcher exits once the unit runs, so its exit alone proves nothing."""
        deadline = self.clock() + START_WAIT_S
        while not self.running() and self.clock() < deadline:
            if isinstance(process, subprocess.Popen) and process.poll() not in (None, 0):
                return
            ended = self.record(journal)
            if all(ended.state_of(step) in ("done", "failed") for step in steps):
                return
            self.sleep(START_POLL_S)

    def stop(self) -> None:
        """Every step is done: what it still fetches helps nothing. It is ended (it cleans up on
        SIGTERM) and waited for, so that nothing of it runs on after the run."""
        if self.command is None or not self.running():
            return
        try:
            pid = int((self.state_dir / LOCK).read_text().strip())
            os.killpg(pid, signal.SIGTERM)  # its own session (launch): uv and apt-fetch too
        except (OSError, ValueError):
            pass
        deadline = self.clock() + STOP_WAIT_S
        while self.running() and self.clock() < deadline:
            self.sleep(START_POLL_S)

    def before_step(self, journal: JournalData, step: str) -> Generator[RunEvent, None, None]:
        """Before ``step`` runs: wait while its downloads are being fetched, say how the ones
        that ended did, then start fetching for the steps after it."""

        def fetching() -> bool:
            return self.record(journal).state_of(step) == "started"

        why = f"waiting for {step}'s downloads to finish"
        yield from self.wait(journal.run_id, fetching, step, why)
        yield from self.report(journal)
        yield from self.start(journal)

    def before_reboot(self, journal: JournalData) -> Generator[RunEvent, None, None]:
        """Before the reboot: everything being fetched lands first."""
        why = "finishing the downloads for after the reboot"
        yield from self.wait(journal.run_id, lambda: True, None, why)
        yield from self.report(journal)

    def wait(
        self, run_id: str, fetching: Callable[[], bool], step: str | None, why: str
    ) -> Generator[RunEvent, None, None]:
        """Wait while it fetches, and while its log shows progress: a fetch gone quiet (a stalled
        mirror) is not waited for; the step then downloads for itself, as without it."""
        if self.command is None:
            return
        told = False
        while self.running() and fetching():
            if not told:
                yield FetchedAhead("waiting", step, why)
                told = True
            if self.quiet_for(run_id) > QUIET_S:
                said = f"no progress for {QUIET_S / 60:g} minutes: not waiting for it any longer"
                yield FetchedAhead("failed", step, said)
                return
            self.sleep(POLL_S)

    def quiet_for(self, run_id: str) -> float:
        """Seconds since the fetching process last wrote to its log (0 before it has one)."""
        try:
            written = (self.state_dir / "logs" / run_id / f"{LOG_ID}.log").stat().st_mtime
        except OSError:
            return 0.0
        return self.wall() - written

    def report(self, journal: JournalData) -> Generator[RunEvent, None, None]:
        """Each step's downloads that ended since the last report, once, while the step is
        still ahead (a runner started after the reboot does not repeat the ones before it)."""
        started = started_steps(journal)
        for step, (state, detail) in self.record(journal).steps.items():
            if state in ("done", "failed") and self.said.get(step) != state and step not in started:
                self.said[step] = state
                yield FetchedAhead(state, step, detail)
