"""Start, watch and steer a runner from a front end (the TUI, ``gpuwizard apply``).

``prepare_run`` writes the reviewed plan as a new journal; ``launch`` starts the detached runner
(a transient systemd unit when there is one, else a new session with stdin from /dev/null), so
it survives the terminal closing and the SSH link dropping; ``status`` says whether one is alive.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuwizard.facts import HostFacts
from gpuwizard.host import Host
from gpuwizard.plan import Plan
from gpuwizard.runner.files import make_private_dir
from gpuwizard.runner.journal import Journal, JournalError, new_journal
from gpuwizard.runner.lock import RunnerStatus, RunRecord, read_run_record, runner_status
from gpuwizard.runner.session import EVENTS, JOURNAL, save_planned_facts
from gpuwizard.selection import Selection


@dataclass(frozen=True)
class Backend:
    """Everything a front end needs to drive one machine, real or simulated."""

    name: str
    """"this machine" or "simulated h100x8-ubuntu2204-fresh", for titles and messages."""
    host: Callable[[], Host]
    """A fresh view of the machine for detection."""
    state_dir: Path
    runner: tuple[str, ...]
    """argv that starts the runner (``--yes`` is appended for unattended reboots)."""
    env: Mapping[str, str]
    """Extra environment for the runner process."""
    reboot: Callable[[], None]
    """Carry out a reboot the person confirmed."""
    simulated: bool = False


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


def prepare_run(state_dir: Path, plan: Plan, selection: Selection, facts: HostFacts) -> str:
    """A new run from a reviewed plan; an earlier finished run's files are kept aside."""
    make_private_dir(state_dir)
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    for name in (JOURNAL, EVENTS):
        old = state_dir / name
        if old.exists():
            old.replace(state_dir / f"{old.stem}-before-{run_id}{old.suffix}")
    save_planned_facts(state_dir, facts)
    Journal.create(state_dir / JOURNAL, new_journal(run_id, plan, selection))
    return run_id


def runner_command(module: str, state_dir: Path, extra: Sequence[str] = ()) -> list[str]:
    return [sys.executable, "-m", module, "run", "--state", str(state_dir), *extra]


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
    with log.open("ab") as out:
        return subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outside the terminal's session: SIGHUP on logout never reaches it
            close_fds=True,
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
