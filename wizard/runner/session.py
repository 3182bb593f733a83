"""One runner session: lock, journal, event log, executor, the apply loop, and a clean ending.

``run_session`` is what the detached runner process executes, for the real machine
(``python -m gpuwizard.runner``) and for the simulation alike; only the Host and the tool
registry differ. It also keeps the login banner that tells whoever logs in how to resume.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from gpuwizard.core.paths import LOGIN_BANNER
from gpuwizard.core.plan import SecretRef
from gpuwizard.core.safetext import one_line
from gpuwizard.machine.detect import detect_host
from gpuwizard.machine.host import Host
from gpuwizard.runner import events as ev
from gpuwizard.runner.control import launch
from gpuwizard.runner.events import StopReason
from gpuwizard.runner.executor import Executor, Tools
from gpuwizard.runner.failpoints import ENV as FAILPOINTS
from gpuwizard.runner.files import make_private_dir, remove_stale_temps, write_atomic
from gpuwizard.runner.journal import Journal, JournalError, now
from gpuwizard.runner.layout import (
    EVENTS,
    EXIT_BUSY,
    EXIT_STOPPED,
    EXITS,
    JOURNAL,
    load_planned_facts,
)
from gpuwizard.runner.lock import (
    AlreadyRunning,
    RunnerLock,
    RunRecord,
    process_start_ticks,
    write_run_record,
)
from gpuwizard.runner.loop import Applier, PersonAnswer
from gpuwizard.runner.prefetch import Ahead
from gpuwizard.runner.secrets import SocketSecrets
from gpuwizard.steps import build_steps


class EventLog:
    """Append-only events.jsonl; line-buffered, fsync-ed at step boundaries."""

    def __init__(self, path: Path, owner_uid: int | None = None) -> None:
        self.path = path
        self.seq = last_seq(path)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        if owner_uid is not None and os.getuid() == 0:
            os.fchown(fd, owner_uid, -1)
        self.handle: IO[str] = os.fdopen(fd, "a", buffering=1, encoding="utf-8")

    def emit(self, event: ev.RunEvent) -> None:
        self.seq += 1
        self.handle.write(ev.encode(self.seq, event))
        if not isinstance(event, ev.LogLines):
            self.handle.flush()
            os.fsync(self.handle.fileno())

    def close(self) -> None:
        self.handle.close()


def last_seq(path: Path) -> int:
    """The last sequence number in an events file (a torn last line is ignored)."""
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - 65536))
            tail = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return 0
    for line in reversed(tail):
        try:
            return ev.decode(line).seq
        except ValueError:
            continue
    return 0


def banner_text(run_id: str, why: str) -> str:
    # Printed at every login: the reason may quote a command's output, so only its clean text.
    reason = one_line(why)[:200]
    run = one_line(run_id)
    message = f"gpuwizard: the GPU setup {run} is not finished ({reason}). Run gpuwizard to see where it stands."
    return (
        "# Written by gpuwizard while a setup is unfinished; removed when it is done.\n"
        f"[ -t 1 ] && printf '\\n  %s\\n\\n' {shlex.quote(message)}\n"
    )


@dataclass(frozen=True)
class SessionOptions:
    yes: bool = False
    """Reboot without asking (headless --yes)."""
    owner_uid: int | None = None
    """The person who started the run: the state files and the answer socket become theirs."""
    one_step: bool = False
    """Run one step that needs work, then stop (the TUI asks before each step)."""
    check_only: bool = False
    """Verify what waited for a reboot, run nothing."""
    reboot_now: bool = False
    """Carry out the reboot the journal waits for (the person confirmed it)."""
    answer: PersonAnswer | None = None
    """The person's "did this machine restart?" (--rebooted), for when nothing else can tell."""
    ahead_command: tuple[str, ...] | None = None
    """The command that fetches later steps' downloads beside the steps (runner/prefetch.py);
    None: nothing is fetched ahead."""


_DEFAULTS = SessionOptions()


def update_banner(host: Host, journal: Journal, why: str) -> None:
    path = host.path(LOGIN_BANNER)
    if not path.parent.is_dir():
        return  # no /etc/profile.d: no login shell would read a banner there
    try:
        if journal.data.finished:
            path.unlink(missing_ok=True)
        else:
            write_atomic(path, banner_text(journal.data.run_id, why).encode(), 0o644)
    except OSError:
        pass  # the banner is a courtesy; a read-only /etc must not fail the run


def add_answer_flags(parser: argparse.ArgumentParser) -> None:
    """The runner's --rebooted and --answered-by (the real and the simulated runner alike)."""
    parser.add_argument(
        "--rebooted",
        choices=("yes", "no"),
        help="the person's answer to 'did this machine restart?' where no boot signal can tell",
    )
    parser.add_argument("--answered-by", choices=("tui", "apply"), default="tui")


def answer_from(args: argparse.Namespace) -> PersonAnswer | None:
    if args.rebooted is None:
        return None
    return PersonAnswer(args.rebooted == "yes", args.answered_by)


def run_session(
    host_view: Callable[[], Host],
    tools: Tools,
    state_dir: Path,
    options: SessionOptions = _DEFAULTS,
) -> int:
    """Run (or resume) the journal's plan; ``host_view`` gives a fresh view of the machine each time."""
    make_private_dir(state_dir)
    lock = RunnerLock(state_dir)
    try:
        lock.acquire()
    except AlreadyRunning:
        return EXIT_BUSY  # before any clean-up: the live runner's files are not ours to touch
    try:
        remove_stale_temps(state_dir)
        return _run_locked(host_view, tools, state_dir, options)
    finally:
        lock.release()


def _run_locked(
    host_view: Callable[[], Host], tools: Tools, state_dir: Path, options: SessionOptions
) -> int:
    host = host_view()
    try:
        journal = Journal.load(state_dir / JOURNAL)
    except JournalError as error:
        write_atomic(state_dir / "runner-error.txt", f"{error}\n".encode(), 0o600)
        return EXIT_STOPPED
    log = EventLog(state_dir / EVENTS, options.owner_uid)
    facts = detect_host(host)
    ticks = process_start_ticks(os.getpid())
    record = RunRecord(os.getpid(), ticks, facts.boot.boot_id, now(), btime=facts.boot.btime)
    write_run_record(state_dir, record)
    current_step = [""]

    def announce(ref: SecretRef) -> None:
        log.emit(ev.PromptShown(current_step[0], ref.prompt, ref.name))

    executor = Executor(
        host,
        tools,
        state_dir / "logs" / journal.data.run_id,
        SocketSecrets(state_dir, announce, options.owner_uid),
        on_lines=lambda step, lines, dropped: log.emit(ev.LogLines(step, lines, dropped)),
    )
    steps = {s.id: s for s in build_steps(journal.data.selection, load_planned_facts(state_dir))}
    applier = Applier(
        journal,
        steps,
        probe=lambda: detect_host(host_view()),
        execute=executor,
        reboot_confirmed=options.yes,
        one_step=options.one_step,
        check_only=options.check_only,
        reboot_now=options.reboot_now,
        answer=options.answer,
        restore=executor.restore,
        log_path=lambda step: str(executor.log_path(step)),
        ahead=Ahead(
            state_dir,
            options.ahead_command,
            # The runner's failpoints are the runner's: the fetching process counts none of them.
            lambda command: launch(command, state_dir, env={FAILPOINTS: ""}),
        ),
    )
    log.emit(
        ev.RunStarted(
            journal.data.run_id,
            os.getpid(),
            facts.boot.boot_id,
            tuple(s.id for s in journal.data.plan.steps),
        )
    )
    why = "it stopped"
    try:
        for event in applier.run():
            if isinstance(event, ev.StepStarted):
                current_step[0] = event.step
            if isinstance(event, ev.RunStopped):
                why = event.why
            log.emit(event)
    except JournalError as error:
        # The record cannot be kept (disk full, I/O error): stop rather than go on unrecorded (T34).
        why = str(error)
        log.emit(ev.RunStopped(StopReason.FAILED, why, current_step[0] or None))
        applier.exit = "failed"
    except Exception as error:
        # A bug must still end the run cleanly: say so in the events, keep the traceback in runner.log.
        why = f"gpuwizard stopped on an internal error ({type(error).__name__}: {error}); details in runner.log"
        log.emit(ev.RunStopped(StopReason.CRASHED, why, current_step[0] or None))
        traceback.print_exc()
        applier.exit = "failed"
    update_banner(host, journal, why)
    write_run_record(state_dir, _finished(record, applier.exit))
    log.close()
    return EXITS[applier.exit]


def _finished(record: RunRecord, outcome: str) -> RunRecord:
    return dataclasses.replace(
        record, exit_code=EXITS.get(outcome, 1), signal=None, finished_at=now(), outcome=outcome
    )
