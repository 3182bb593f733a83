"""Which front end drives this machine's setup: the first to look at it, for as long as it runs.

Two front ends must never both decide what runs: with the TUI paused on a confirm, an
``apply --yes`` in another terminal would run the steps its person had not confirmed. The first
front end (the TUI or ``apply``) to look at the machine takes an exclusive flock on
``frontend.lock`` in the state folder and keeps it until it exits; the kernel drops it when its
process dies, so a killed front end never blocks the next. Any other front end is a viewer: it
watches a run in progress, or is refused, told who drives (pid, terminal, since when).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from gpuwizard.runner.files import make_private_dir, write_atomic

LOCK = "frontend.lock"
HOLDER = "frontend.json"


@dataclass(frozen=True)
class Holder:
    pid: int
    tty: str
    since: str
    command: str

    def describe(self) -> str:
        return f"`{self.command}` (pid {self.pid} on {self.tty}, since {self.since})"


UNKNOWN = Holder(0, "an unknown terminal", "an unknown time", "gpuwizard")


def _terminal() -> str:
    for stream in (sys.stdin, sys.stdout):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if stream.isatty():
                return os.ttyname(stream.fileno())
    return "no terminal"


class Lease:
    """This process's claim on driving the setup (held from ``claim`` until ``release``)."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.fd: int | None = None

    @property
    def held(self) -> bool:
        return self.fd is not None

    def claim(self, command: str) -> Holder | None:
        """Take the lease; None when this process holds it now, else who holds it."""
        if self.fd is not None:
            return None
        make_private_dir(self.state_dir)
        fd = os.open(self.state_dir / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return self.read_holder()
        self.fd = fd
        since = datetime.now(timezone.utc).astimezone().strftime("%Y-%m-%d %H:%M")
        holder = Holder(os.getpid(), _terminal(), since, command)
        write_atomic(self.state_dir / HOLDER, json.dumps(holder.__dict__).encode(), 0o600)
        return None

    def other(self) -> Holder | None:
        """Who else holds the lease, without taking it (a dry run writes nothing)."""
        if self.fd is not None:
            return None
        try:
            fd = os.open(self.state_dir / LOCK, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None  # no lock file, or not ours to read: nobody drives from here
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return self.read_holder()
        finally:
            os.close(fd)
        return None

    def read_holder(self) -> Holder:
        try:
            data = json.loads((self.state_dir / HOLDER).read_text(encoding="utf-8"))
            return Holder(
                int(data["pid"]), str(data["tty"]), str(data["since"]), str(data["command"])
            )
        except (OSError, ValueError, KeyError, TypeError):
            return UNKNOWN

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # the kernel drops the lock with the last descriptor
            self.fd = None
