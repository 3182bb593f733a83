"""One runner per host: a lock on a file, and run.json to tell a live runner from a dead one.

The lock file is held with an open-file-description lock (``F_OFD_SETLK``, a write lock on the
whole file) for the runner's lifetime; the kernel releases it when the process dies, so a crash
never leaves a stale lock. Unlike ``flock``, such a lock can be *tested* without being taken
(``F_OFD_GETLK``): a front end asking "is a runner at work?" never holds the lock even for a
moment, so a runner starting at that instant cannot find it taken and leave "busy" (issue 14).
Unlike classic POSIX locks, it belongs to the open file, not the process: closing another
descriptor of the same file does not drop it, and two runners in one process exclude each other.
run.json records the pid, its start time (field 22 of /proc/<pid>/stat) and the boot_id,
because a pid alone is reused: a runner is alive only if all three still match (A1), and gone
without a final record means interrupted.
Where the boot_id cannot be read, /proc/stat's btime stands in for it (issue 14).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import struct
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


FLOCK = struct.Struct("@hhqqi4x")
"""Linux's ``struct flock`` on 64-bit machines (x86_64, aarch64): l_type, l_whence, l_start,
l_len, l_pid, padding. l_start 0 and l_len 0 mean the whole file."""


def _lock_request(kind: int) -> bytes:
    return FLOCK.pack(kind, os.SEEK_SET, 0, 0, 0)


def lock_whole_file(fd: int) -> None:
    """Take the write lock at once, or raise BlockingIOError (held by another open file)."""
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _lock_request(fcntl.F_WRLCK))
    except OSError as error:
        if error.errno in (errno.EAGAIN, errno.EACCES):
            raise BlockingIOError(error.errno, "held") from None
        raise


def held_by_another(fd: int) -> bool:
    """Whether another open file holds a lock on the whole file; takes nothing."""
    answer = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, _lock_request(fcntl.F_WRLCK))
    return bool(FLOCK.unpack(answer)[0] != fcntl.F_UNLCK)


class RunnerLock:
    def __init__(self, state_dir: Path, name: str = "lock") -> None:
        self.path = state_dir / name
        self.handle: IO[str] | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # 0600 whatever the umask (T38): created restricted, like every file in the state dir.
        handle = os.fdopen(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600), "a+")
        try:
            lock_whole_file(handle.fileno())
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
            self.handle.close()  # the lock belongs to this open file: closing it releases it
            self.handle = None

    def is_held_elsewhere(self) -> bool:
        """A runner holds the lock now; asked without taking it (F_OFD_GETLK), so a runner
        starting at this instant never meets the question."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            return held_by_another(fd)
        finally:
            os.close(fd)


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
