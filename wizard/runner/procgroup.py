"""Process groups of a running command: signal them, and end them without leaving one behind.

ptyprocess makes the command a session leader, so its pid is the group id, and apt's dpkg and
dkms grandchildren share it; ending the group ends them all.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pexpect


def signal_group(pgid: int, sig: int) -> bool:
    """Signal the group; False when no process of it is left."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # a member we may not signal (setuid) still exists
    return True


def kill_group(child: pexpect.spawn[bytes], grace_s: float) -> None:
    """SIGTERM the child's process group, SIGKILL what is left after ``grace_s``.

    ptyprocess makes the child a session leader, so its pid is the group id and apt's
    dpkg and dkms grandchildren share it.
    """
    pgid = child.pid
    if pgid is None or not signal_group(pgid, signal.SIGTERM):
        return
    end = time.monotonic() + grace_s
    while time.monotonic() < end:
        child.isalive()  # reaps the leader, so that its zombie does not count as alive
        if not signal_group(pgid, 0) or not has_running_member(pgid):
            return
        time.sleep(0.02)
    signal_group(pgid, signal.SIGKILL)


def has_running_member(pgid: int) -> bool:
    """Whether a process of the group is still running, zombies aside.

    killpg(pgid, 0) also finds zombies until their new parent reaps them, which a container's
    PID 1 may do late or never; waiting on those would only delay the SIGKILL of nothing.
    """
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        return True  # no procfs: trust killpg
    return any(
        is_running_in(entry.name, pgid) for entry in os.scandir(proc) if entry.name.isdigit()
    )


def is_running_in(pid: str, pgid: int) -> bool:
    try:
        stat = Path("/proc", pid, "stat").read_text()
    except OSError:
        return False  # gone since the listing
    state, _ppid, group = stat.rsplit(")", 1)[1].split()[:3]
    return state != "Z" and int(group) == pgid


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
