"""Start, watch and steer a runner from a front end (the TUI, ``gpuwizard apply``).

``prepare_run`` writes the reviewed plan as a new journal; ``launch`` starts the detached runner
(a transient systemd unit when there is one, else a new session with stdin from /dev/null), so
it survives the terminal closing and the SSH link dropping; ``status`` says whether one is alive.
``starting`` lets one front end at a time decide, prepare and launch, so two front ends started
together never start two runs (T11): the second waits, then finds the first's runner and attaches.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.isolation import SAFE_CWD, own_python
from gpuwizard.core.plan import Plan
from gpuwizard.core.selection import Selection
from gpuwizard.machine import Machine
from gpuwizard.runner.files import make_private_dir
from gpuwizard.runner.journal import Journal, JournalError, new_journal
from gpuwizard.runner.layout import EVENTS, JOURNAL, PLANNED_FACTS, save_planned_facts
from gpuwizard.runner.lock import (
    AlreadyRunning,
    RunnerLock,
    RunnerStatus,
    RunRecord,
    read_run_record,
    runner_status,
)


@dataclass(frozen=True, kw_only=True)
class Backend(Machine):
    """A machine a front end can change: the runner that carries a plan out, and the reboot."""

    runner: tuple[str, ...]
    """argv that starts the runner (``--yes`` is appended for unattended reboots)."""
    reboot: Callable[[], None]
    """Carry out a reboot the person confirmed."""


@dataclass(frozen=True)
class RunState:
    status: RunnerStatus
    journal: Journal | None
    problem: str | None = None


def current(state_dir: Path, boot_id: str | None) -> RunState:
    try:
        journal: Journal | None = Journal.load(state_dir / JOURNAL)
        problem = None
    except JournalError as error:
        journal, problem = None, str(error)
    if journal is None and problem and "no journal" in problem:
        problem = None
    return RunState(runner_status(state_dir, boot_id), journal, problem)


class StartBusy(RuntimeError):
    """Another front end has been starting a run for too long; the message says what to do."""


@contextlib.contextmanager
def starting(state_dir: Path, timeout_s: float = 60) -> Iterator[None]:
    """Hold the right to start a run: from looking at the state until the runner is up.

    A second front end waits here, then sees the first one's runner as running and attaches.
    The kernel drops the lock when its holder dies, so a killed front end never blocks another.
    """
    make_private_dir(state_dir)
    fd = os.open(state_dir / "start.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StartBusy(
                        f"another gpuwizard has been starting a run for {timeout_s:.0f} s; "
                        "if none is open, run again"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # releases the lock


def prepare_run(state_dir: Path, plan: Plan, selection: Selection, facts: HostFacts) -> str:
    """A new run from a reviewed plan; an earlier finished run's files are kept aside.

    Raises:
        AlreadyRunning: a runner is at work here; its journal and events are left alone.
    """
    make_private_dir(state_dir)
    if RunnerLock(state_dir).is_held_elsewhere():
        raise AlreadyRunning("a gpuwizard runner is at work on this machine; attach to it instead")
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    for name in (JOURNAL, EVENTS, PLANNED_FACTS):  # kept together: exports read earlier setups
        old = state_dir / name
        if old.exists():
            old.replace(state_dir / f"{old.stem}-before-{run_id}{old.suffix}")
    save_planned_facts(state_dir, facts)
    Journal.create(state_dir / JOURNAL, new_journal(run_id, plan, selection))
    return run_id


def runner_command(module: str, state_dir: Path, extra: Sequence[str] = ()) -> list[str]:
    return [*own_python("-m", module), "run", "--state", str(state_dir), *extra]


def launch(
    command: Sequence[str],
    state_dir: Path,
    *,
    env: Mapping[str, str] | None = None,
    systemd: bool | None = None,
) -> subprocess.Popen[bytes]:
    """Start the runner detached; the process is the runner, or the systemd-run client."""
    log = state_dir / "runner.log"
    if systemd is None:  # a transient unit only where systemd really runs the machine
        running = Path("/run/systemd/system").is_dir()
        systemd = os.geteuid() == 0 and running and shutil.which("systemd-run") is not None
    if systemd:
        unit = f"gpuwizard-run-{uuid.uuid4().hex[:6]}"
        command = [
            "systemd-run", f"--unit={unit}", "--collect", "--quiet",
            f"--property=StandardOutput=append:{log}", f"--property=StandardError=append:{log}",
            *command,
        ]  # fmt: skip
    # 0600 whatever the umask: the runner's output may quote the machine's configuration (T38).
    with os.fdopen(os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as out:
        return subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outside the terminal's session: SIGHUP on logout never reaches it
            close_fds=True,
            cwd=SAFE_CWD,  # never the caller's folder: what is planted there is not imported
            env={**os.environ, **(env or {})},
        )


def wait_until_started(
    state_dir: Path,
    process: subprocess.Popen[bytes],
    previous: RunRecord | None,
    timeout_s: float = 30,
) -> bool:
    """Wait for the new runner to announce itself in run.json; False when it never did."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        record = read_run_record(state_dir)
        if record is not None and record != previous:
            return True
        if process.poll() not in (None, 0):
            return False  # it died before writing anything (its output is in runner.log)
        time.sleep(0.05)
    return False


def last_outcome(state_dir: Path) -> str | None:
    record = read_run_record(state_dir)
    return record.outcome if record else None


def request_skip(state_dir: Path, step_id: str) -> None:
    """Mark a step to be skipped by the next runner (only while no runner is at work)."""
    journal = Journal.load(state_dir / JOURNAL)
    if step_id not in journal.data.skip_requested:
        journal.set(skip_requested=(*journal.data.skip_requested, step_id))
