"""A real terminal (tmux) that runs a command and shows what a person would see."""

from __future__ import annotations

import itertools
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest


def require_tmux() -> None:
    if not shutil.which("tmux"):
        # CI installs tmux and must run these; a bare machine running the README's command skips.
        if os.environ.get("GPUWIZARD_CI"):
            pytest.fail("these tests drive a real terminal: install tmux (.ci/run does)")
        pytest.skip("tmux is not installed (apt-get install tmux); CI runs these")


_INSTANCES = itertools.count(1)


class Terminal:
    """One tmux session of 80x24 (by default) running ``command``.

    Each start gets a tmux server of its own (``-L``): killing a server's last session makes it
    exit asynchronously, and a client that reaches the exiting server's socket fails ("server
    exited unexpectedly"). A shared default server also mixes sessions of concurrent test runs.
    """

    def __init__(self, name: str, home: Path, width: int = 80, height: int = 24) -> None:
        self.name = name
        self.home = home
        self.size = (str(width), str(height))
        self.starts = 0
        self.instance = next(_INSTANCES)

    @property
    def socket(self) -> str:
        # The instance too: the tests of one process share a name (gwp<pid>), and the server the
        # last test killed may still be exiting on "<name>-1" when the next test starts there.
        return f"{self.name}-{self.instance}-{self.starts}"

    def tmux(self, *args: str) -> list[str]:
        return ["tmux", "-L", self.socket, *args]

    def start(self, command: str) -> None:
        self.starts += 1
        subprocess.run(
            [
                *self.tmux("new-session"),
                "-d",
                "-s",
                self.name,
                "-x",
                self.size[0],
                "-y",
                self.size[1],
                command,
            ],
            check=True,
        )

    def alive(self) -> bool:
        return (
            subprocess.run(
                self.tmux("has-session", "-t", self.name), capture_output=True, check=False
            ).returncode
            == 0
        )

    def screen(self) -> str:
        out = subprocess.run(
            self.tmux("capture-pane", "-t", self.name, "-p"),
            capture_output=True,
            text=True,
            check=False,
        )
        return out.stdout

    def wait_for(self, text: str, timeout_s: float = 60) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            shown = self.screen()
            if text in shown:
                return shown
            time.sleep(0.2)
        raise AssertionError(f"never saw {text!r}; the screen was:\n{self.screen()}")

    def press(self, *keys: str) -> None:
        subprocess.run(self.tmux("send-keys", "-t", self.name, *keys), check=True)

    def kill(self, timeout_s: float = 30) -> None:
        """The terminal goes away, as when an SSH link drops; returns once the program that ran
        in it has exited. The server's end only hangs the program up: a front end still shutting
        down (releasing its lease, a last atomic write) would otherwise change the machine's
        state while the test reads or copies it."""
        pid = self.pane_pid()
        exit_watch = watch_exit(pid) if pid is not None else None  # before the hang-up
        subprocess.run(self.tmux("kill-server"), capture_output=True, check=False)
        if exit_watch is not None:
            try:
                exited, _, _ = select.select([exit_watch], [], [], timeout_s)
            finally:
                os.close(exit_watch)
            assert exited, f"pid {pid} still runs {timeout_s} s after the hang-up"

    def pane_pid(self) -> int | None:
        """The pid of the program in the pane; None when the session has gone."""
        shown = subprocess.run(
            self.tmux("display-message", "-p", "-t", self.name, "#{pane_pid}"),
            capture_output=True,
            text=True,
            check=False,
        )
        return int(shown.stdout) if shown.returncode == 0 and shown.stdout.strip() else None


def watch_exit(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits (a pidfd); None when it has."""
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        return None
