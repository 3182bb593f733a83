"""One runner per host: an flock, and run.json to tell a live runner from a dead one.

The lock file is held with ``fcntl.flock`` for the runner's lifetime; the kernel releases it
when the process dies, so a crash never leaves a stale lock. run.json records the pid, its start
time (field 22 of /proc/<pid>/stat) and the boot_id, because a pid alone is reused: a runner is
alive only if all three still match (A1), and gone without a final record means interrupted.
Where the boot_id cannot be read, /proc/stat's btime stands in for it (issue 14).
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from gpuwizard.core.codec import CodecError, from_jsonable, to_jsonable
from gpuwizard.core.facts import BootMark, judge_boot
from gpuwizard.runner.files import write_atomic

RunnerStatus = Literal["running", "finished", "interrupted", "none"]


class AlreadyRunning(RuntimeError):
    """Another runner holds the lock; the message names its pid."""


@dataclass(frozen=True)
class RunRecord:
    pid: int
    start_ticks: int | None
    """Process start time, in clock ticks after boot (/proc/<pid>/stat field 22)."""
    boot_id: str | None
    started_at: str
    exit_code: int | None = None
    signal: int | None = None
    finished_at: str | None = None
    outcome: str | None = None
    """done, failed, reboot, stopped: how the run ended, when it ended cleanly."""
    btime: int | None = None
    """/proc/stat's btime at the start: tells the boot when the boot_id cannot be read."""

    @property
    def mark(self) -> BootMark:
        return BootMark(self.boot_id, self.btime)


def process_start_ticks(pid: int, proc: Path = Path("/proc")) -> int | None:
    """Start time of a live process, or None when it is gone (or a zombie)."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    if fields[:1] in (["Z"], ["X"]):
        return None  # a zombie has finished; only its parent has not reaped it yet
    try:
        return int(fields[19])  # field 22 overall; fields[0] here is field 3
    except (IndexError, ValueError):
        return None


class RunnerLock:
    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "lock"
        self.handle: IO[str] | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # 0600 whatever the umask (T38): created restricted, like every file in the state dir.
        handle = os.fdopen(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600), "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise AlreadyRunning(
                f"another gpuwizard runner is active (pid {holder}); attach to it instead"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self.handle = handle

    def release(self) -> None:
        if self.handle is not None:
            fcntl.flock(self.handle, fcntl.LOCK_UN)
            self.handle.close()
            self.handle = None

    def is_held_elsewhere(self) -> bool:
        if not self.path.exists():
            return False
        with self.path.open("a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def write_run_record(state_dir: Path, record: RunRecord) -> None:
    write_atomic(state_dir / "run.json", json.dumps(to_jsonable(record), indent=1).encode(), 0o600)


def read_run_record(state_dir: Path) -> RunRecord | None:
    try:
        record: RunRecord = from_jsonable(
            RunRecord, json.loads((state_dir / "run.json").read_text())
        )
    except (OSError, json.JSONDecodeError, CodecError):
        return None
    return record


def runner_status(
    state_dir: Path, boot: BootMark | str | None, proc: Path = Path("/proc")
) -> RunnerStatus:
    """running: same boot, same pid with the same start time; else finished, interrupted or none.

    ``boot`` is this boot's mark (a bare string: its boot_id). When the boot cannot be judged
    (neither boot_id nor btime readable), the pid and its start time decide alone: an unreadable
    boot_id must never make a live runner look ended.
    """
    record = read_run_record(state_dir)
    if record is None:
        return "none"
    if record.finished_at is not None:
        return "finished"
    now = boot if isinstance(boot, BootMark) else BootMark(boot)
    same_boot = judge_boot(record.mark, now).same
    same_process = (
        same_boot is not False
        and record.start_ticks is not None
        and process_start_ticks(record.pid, proc) == record.start_ticks
    )
    return "running" if same_process else "interrupted"
