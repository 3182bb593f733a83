"""Carry out one approved action on the host: a command through the pty driver, or a file write.

Never decides what to run; that is the plan's job. Commands get a fixed environment, a log file
per step, their known prompts answered and their secret prompts routed to the person. Two apt
troubles are handled here, where they happen: a lock held by another apt (wait and retry with
backoff, name the holder, never delete the lock) and an interrupted dpkg: checked before every
apt-get update, install and upgrade (a crash mid-apt leaves one, T12) and recognised in apt's
output (T16); either way ``dpkg --configure -a`` runs once, non-interactively, before the command
(again), followed by ``apt-get -f install`` when dpkg still reports a package left
half-installed. Which operation gets which care is decided by its type (``care_for``), never by
reading its argv.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from gpuwizard.core.isolation import SAFE_CWD, own_python
from gpuwizard.core.ops import (
    APT_FETCH_TOOL,
    DOWNLOAD_TOOL,
    AptFixBroken,
    Command,
    DpkgConfigure,
    Prefetch,
    Program,
    care_for,
)
from gpuwizard.core.paths import DOWNLOADS_DIR
from gpuwizard.core.plan import Action, WriteFile, uses_downloads
from gpuwizard.machine.detect.installs import read_dpkg
from gpuwizard.machine.host import SAFE_PATH, Host
from gpuwizard.runner.eventquota import LineQuota, Share
from gpuwizard.runner.failpoints import failpoint
from gpuwizard.runner.files import make_private_dir, remove_stale_temps, write_atomic
from gpuwizard.runner.pty import Answer, CommandError, RunResult, SecretSource, run_command
from gpuwizard.runner.secrets import SecretUnanswered

BASE_ENV = {
    "PATH": SAFE_PATH,
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "HOME": "/root",
    "TERM": "dumb",
}
LOCK_MESSAGE = re.compile(
    r"Could not get lock|Unable to acquire the dpkg frontend lock|is held by process"
)
DPKG_INTERRUPTED = re.compile(r"dpkg was interrupted, you must manually run")
LOCK_HOLDER = re.compile(r"held by process (\d+)(?: \(([^)]*)\))?")
LOCK_RETRIES = 5
LOCK_BACKOFF_S = 1.0
"""The n-th retry waits LOCK_BACKOFF_S * 2**n seconds: 2, 4, 8, 16, 32 (about a minute in all)."""
REPAIR = DpkgConfigure().command()
FIX_BROKEN = AptFixBroken().command()


@dataclass(frozen=True)
class Tools:
    """How a command's argv[0] becomes a program on this host.

    gpuwizard's own tools (``gpuwizard-fetch``) run from its installation; everything else is
    found on the fixed PATH, or, in the simulation, goes through ``shim`` so that nothing real is
    ever touched.
    """

    builtin: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: {
            DOWNLOAD_TOOL: own_python("-m", "gpuwizard.runner.fetch"),
            APT_FETCH_TOOL: own_python("-m", "gpuwizard.runner.aptfetch"),
        }
    )
    shim: tuple[str, ...] | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    """What the tools need in their environment besides the fixed one (the shim's sandbox)."""

    def resolve(self, argv: tuple[str, ...]) -> tuple[str, ...]:
        if self.shim is not None:
            return (*self.shim, *argv)
        if argv[0] in self.builtin:
            return (*self.builtin[argv[0]], *argv[1:])
        return argv


@dataclass(frozen=True)
class Outcome:
    ok: bool
    result: str
    last_lines: tuple[str, ...] = ()

    def describe(self) -> str:
        return self.result


Emit = Callable[[str, tuple[str, ...], int], None]
"""(step id, display lines, lines dropped) -> None: the live log."""


class Executor:
    def __init__(
        self,
        host: Host,
        tools: Tools,
        logs_dir: Path,
        secrets: SecretSource | None,
        on_lines: Emit,
        env: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.host = host
        self.tools = tools
        self.logs_dir = logs_dir
        self.secrets = secrets
        self.on_lines = on_lines
        self.env = {**BASE_ENV, **tools.env, **(env or {})}
        self.sleep = sleep
        self.backups: dict[str, list[tuple[Path, Path | None]]] = {}
        self.quotas: dict[str, LineQuota] = {}
        """Each step's share of the event stream (its log file has every line)."""

    def log_path(self, step_id: str) -> Path:
        return self.logs_dir / f"{step_id}.log"

    def __call__(self, step_id: str, action: Action | Prefetch) -> Outcome:
        outcome = self._carry_out(step_id, action)
        failpoint("executor.after_run")  # done, not yet recorded: a crash here re-runs it
        return outcome

    def _carry_out(self, step_id: str, action: Action | Prefetch) -> Outcome:
        if uses_downloads(action):
            # What is downloaded there is run or installed from there: only root may enter.
            make_private_dir(self.host.path(DOWNLOADS_DIR))
        match action:
            case WriteFile():
                return self.write(step_id, action)
            case _:
                return self.run(step_id, action)

    # ------------------------------------------------------------------------------ commands
    def run(self, step_id: str, op: Program | Prefetch) -> Outcome:
        action, care = op.command(), care_for(op)
        if action.creates and self.host.exists(action.creates):
            return Outcome(True, f"skipped: {action.creates} exists")
        if (
            care.repair_first
            and read_dpkg(self.host).interrupted
            and not self._repair(
                step_id,
                "dpkg was left interrupted by an earlier run; running dpkg --configure -a first",
            )
        ):
            return Outcome(False, "dpkg --configure -a failed: the package database needs repair")
        result = self._spawn_waiting_for_lock(step_id, action, care.retry_on_lock)
        if not self._ok(action, result) and self._interrupted(result):
            if self._repair(
                step_id, "apt says dpkg was interrupted; running dpkg --configure -a, then again"
            ):
                result = self._spawn(step_id, action)
            if self._interrupted(result):
                return Outcome(
                    False,
                    f"{result.describe()}: dpkg is still interrupted after one dpkg --configure -a; "
                    "run `dpkg --configure -a` by hand, read its errors, then run gpuwizard again",
                    result.last_lines,
                )
        return Outcome(self._ok(action, result), result.describe(), result.last_lines)

    def _spawn_waiting_for_lock(
        self, step_id: str, action: Command, retry_on_lock: bool
    ) -> RunResult | Outcome:
        attempt, result = 0, self._spawn(step_id, action)
        while (
            retry_on_lock
            and not self._ok(action, result)
            and self._locked(result)
            and attempt < LOCK_RETRIES
        ):
            attempt += 1
            wait_s = LOCK_BACKOFF_S * 2**attempt
            self._note(
                step_id,
                f"gpuwizard: {self._holder(result)} holds the package lock; waiting {wait_s:g} s "
                f"(try {attempt + 1} of {LOCK_RETRIES + 1}); the lock is never deleted",
            )
            self.sleep(wait_s)
            result = self._spawn(step_id, action)
        return result

    def _repair(self, step_id: str, note: str) -> bool:
        """One ``dpkg --configure -a``, noninteractive, keeping local config files (T12, T16);
        then ``apt-get -f install`` if a package is still half-installed (B6)."""
        self._note(step_id, f"gpuwizard: {note}")
        if not self._ok(REPAIR, self._spawn(step_id, REPAIR)):
            return False
        if not read_dpkg(self.host).interrupted:
            return True
        self._note(
            step_id, "gpuwizard: a package is still half-installed; running apt-get -f install"
        )
        return self._ok(FIX_BROKEN, self._spawn(step_id, FIX_BROKEN))

    def _open_log(self, step_id: str) -> BinaryIO:
        """The step's log, appended to; 0600 in a 0700 folder whatever the umask (T38)."""
        make_private_dir(self.logs_dir.parent)
        make_private_dir(self.logs_dir)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        return os.fdopen(os.open(self.log_path(step_id), flags, 0o600), "ab")

    def _spawn(self, step_id: str, action: Command) -> RunResult | Outcome:
        failpoint("executor.before_run")
        argv = self.tools.resolve(action.argv)
        answers = [Answer(re.compile(pattern), reply) for pattern, reply in action.answers.items()]
        quota = self.quotas.setdefault(step_id, LineQuota())
        with self._open_log(step_id) as log:
            log.write(f"\n$ {action.display()}\n".encode())
            try:
                return run_command(
                    argv,
                    env={**self.env, **action.env},
                    log=log,
                    cwd=SAFE_CWD,
                    on_lines=lambda lines: self._emit(step_id, quota.take(lines)),
                    answers=answers,
                    secrets=self.secrets,
                    timeout_s=action.timeout_s,
                    silence_timeout_s=action.silence_timeout_s,
                )
            except (CommandError, SecretUnanswered) as error:
                log.write(f"gpuwizard: {error}\n".encode())
                return Outcome(False, str(error))
            finally:
                self._emit(step_id, quota.finish())  # the lines it ended with name the error

    @staticmethod
    def _ok(action: Command, result: RunResult | Outcome) -> bool:
        if isinstance(result, Outcome):
            return result.ok
        return (
            result.signal is None
            and result.timed_out is None
            and result.exit_status in action.ok_codes
        )

    @staticmethod
    def _tail(result: RunResult | Outcome) -> str:
        return "\n".join(result.last_lines)

    def _locked(self, result: RunResult | Outcome) -> bool:
        return bool(LOCK_MESSAGE.search(self._tail(result)))

    def _interrupted(self, result: RunResult | Outcome) -> bool:
        return bool(DPKG_INTERRUPTED.search(self._tail(result)))

    def _holder(self, result: RunResult | Outcome) -> str:
        """Who holds the lock, as apt names it: "unattended-upgr (pid 4750)"."""
        found = LOCK_HOLDER.search(self._tail(result))
        if found is None:
            return "another package manager"
        return (
            f"{found.group(2)} (pid {found.group(1)})"
            if found.group(2)
            else f"pid {found.group(1)}"
        )

    def _emit(self, step_id: str, share: Share | None) -> None:
        if share is not None:
            self.on_lines(step_id, share.lines, share.dropped)

    def _note(self, step_id: str, text: str) -> None:
        with self._open_log(step_id) as log:
            log.write(text.encode() + b"\n")
        self.on_lines(step_id, (text,), 0)

    # --------------------------------------------------------------------------------- files
    def write(self, step_id: str, action: WriteFile) -> Outcome:
        target = self.host.path(action.path)
        if target.parent.is_dir():
            remove_stale_temps(target.parent)  # left by a crash mid-write here (T33)
        if action.backup:
            self._back_up(step_id, target, action.content.encode("utf-8"))
        try:
            write_atomic(target, action.content.encode("utf-8"), action.mode)
        except OSError as error:
            return Outcome(False, f"cannot write {action.path}: {error.strerror}")
        self._note(step_id, f"gpuwizard: wrote {action.path} (mode {action.mode:o})")
        return Outcome(True, f"wrote {action.path}")

    def _back_up(self, step_id: str, target: Path, content: bytes) -> None:
        """Keep the file's previous content for ``restore``.

        A crash right after the write re-runs it on resume; the target then already holds the new
        content, so the backup made the first time (the real original) is kept, not overwritten.
        """
        backup = target.with_name(target.name + ".gpuwizard-bak")
        if not target.exists():
            self.backups.setdefault(step_id, []).append((target, None))
            return
        if target.read_bytes() != content:
            shutil.copy2(target, backup)
        elif not backup.exists():
            return  # already written, original unknown: nothing to put back
        self.backups.setdefault(step_id, []).append((target, backup))

    def restore(self, step_id: str) -> list[str]:
        """Put back the files a failed step replaced; returns what was restored."""
        restored = []
        for target, backup in self.backups.pop(step_id, []):
            if backup is not None and backup.exists():
                write_atomic(
                    target,
                    backup.read_bytes(),
                    target.stat().st_mode & 0o777 if target.exists() else 0o644,
                )
            else:
                target.unlink(missing_ok=True)
            restored.append(str(target))
        return restored
