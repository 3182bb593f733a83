"""The pexpect driver: runs one install command in a pseudo-terminal and reports how it ended.

Raw output streams to the step's log file (secrets scrubbed), decoded display lines go to the live
UI in batches, prompts the plan expects are answered, and two clocks (silence, deadline) make sure
a command never hangs forever. It must never write a secret anywhere (so no pexpect ``logfile``,
which records what we send), never keep the whole output in memory, and never leave a process of
the command's group behind. It decides nothing about *what* runs: the plan does.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal, Protocol, overload

import pexpect

from gpuwizard.core.plan import SecretRef
from gpuwizard.runner.procgroup import kill_group, signal_name
from gpuwizard.runner.ptytext import Display, Scrubber

TimedOut = Literal["silence", "deadline"]
LineSink = Callable[[Sequence[str]], None]
"""Receives display lines in batches; a line is cleaned only when the sink reads it."""

READ_SIZE = 65536
POLL_S = 0.05
LOG_FLUSH_S = 0.2
BATCH_S = 0.05
BATCH_LINES = 1000
KILL_GRACE_S = 2.0
DRAIN_S = 1.0
SECRET_ECHO_WAIT_S = 2.0
MATCH_WINDOW = 4096
"""Prompt patterns see at most this many trailing characters of the unterminated line."""


class SecretSource(Protocol):
    """Gives a secret's value when a prompt asks for it; may block while a person types it."""

    def __call__(self, ref: SecretRef, prompt_text: str) -> str: ...


@dataclass(frozen=True)
class Answer:
    """A reply to a prompt the plan expects."""

    pattern: re.Pattern[str]
    """Searched in the unterminated tail of the output (the prompt line), as displayed."""
    reply: str | SecretRef
    """Sent followed by "\\n"; a SecretRef is resolved through the SecretSource when asked."""


@dataclass(frozen=True)
class RunResult:
    """How a command ended. Exit status and signal come from reaping it, never from guessing."""

    exit_status: int | None
    """From close()/wait(); None when a signal killed it."""
    signal: int | None
    """The signal that killed it (e.g. 9), else None."""
    timed_out: TimedOut | None
    duration_s: float
    bytes_out: int
    """Raw bytes read from the child."""
    last_lines: tuple[str, ...]
    """The last <= 20 display lines, including an unterminated prompt."""
    limit_s: float | None = None
    """The timeout that fired, in seconds; None when none did."""

    @property
    def ok(self) -> bool:
        return self.exit_status == 0 and self.signal is None and self.timed_out is None

    def describe(self) -> str:
        """One line for the user: "exited 100", "killed by SIGKILL", "no output for 600 s; ..."."""
        if self.timed_out == "deadline":
            return f"timed out after {self._limit()} s"
        if self.timed_out == "silence":
            return f"no output for {self._limit()} s; {self._last_line()}"
        if self.signal is not None:
            return f"killed by {signal_name(self.signal)}"
        if self.exit_status is not None:
            return f"exited {self.exit_status}"
        return "ended with an unknown status"

    def _limit(self) -> str:
        return f"{self.limit_s:g}" if self.limit_s is not None else f"{self.duration_s:.0f}"

    def _last_line(self) -> str:
        shown = [line for line in self.last_lines if line.strip()]
        return f"last line: {shown[-1].strip()!r}" if shown else "it printed nothing"


class CommandError(ValueError):
    """Bad input found before spawning: empty argv, missing cwd, tool not found."""


def run_command(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    log: BinaryIO,
    on_lines: LineSink | None = None,
    answers: Sequence[Answer] = (),
    secrets: SecretSource | None = None,
    cwd: str | None = None,
    timeout_s: float = 3600.0,
    silence_timeout_s: float = 600.0,
    stdin_null: bool | None = None,
    dimensions: tuple[int, int] = (50, 200),
) -> RunResult:
    """Run argv in a pty with exactly ``env``; stream, answer, time out, reap the whole group.

    Args:
        argv: argv[0] is a path or a name found on ``env["PATH"]``.
        env: the complete environment; nothing is inherited from os.environ.
        log: receives the raw bytes (secrets replaced by "********"), flushed every 0.2 s.
        on_lines: receives display lines in batches (every 50 ms or 1000 lines).
        answers: prompts to answer, each occurrence once.
        secrets: resolves SecretRef replies; required when an answer uses one.
        stdin_null: the child's stdin is /dev/null (reads get EOF); None means "when no answers".

    Raises:
        CommandError: before spawning, when the command cannot run as given.
    """
    program = _check_command(argv, env, cwd, answers, secrets)
    null_stdin = not answers if stdin_null is None else stdin_null
    command, args = _spawn_argv(program, argv[1:], null_stdin)
    clock = _Clock(timeout_s, silence_timeout_s)
    child = _spawn(command, args, env, cwd, dimensions)
    session = _Session(child, clock, _Outlet(log, on_lines), answers, secrets)
    try:
        timed_out = session.run()
    finally:
        kill_group(
            child, KILL_GRACE_S
        )  # leftovers of a normal exit, or everything after an exception
        if not child.isalive():
            # Reaped already, so ptyprocess's 0.1 s pause before its own kill is moot.
            child.ptyproc.delayafterclose = 0  # type: ignore[attr-defined]  # not in types-pexpect
        child.close(force=True)  # pexpect#168: children survive exceptions without this
    return RunResult(
        exit_status=child.exitstatus,
        signal=child.signalstatus,
        timed_out=timed_out,
        duration_s=time.monotonic() - clock.started,
        bytes_out=session.bytes_out,
        last_lines=tuple(session.display.last),
        limit_s=clock.limit(timed_out),
    )


def _check_command(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str | None,
    answers: Sequence[Answer],
    secrets: SecretSource | None,
) -> str:
    if not argv or not argv[0]:
        raise CommandError("empty command: there is nothing to run")
    if cwd is not None and not Path(cwd).is_dir():
        # pexpect#757: spawn() with a missing cwd hangs instead of failing, so check first.
        raise CommandError(f"{argv[0]}: working directory {cwd} does not exist")
    if secrets is None and any(isinstance(a.reply, SecretRef) for a in answers):
        raise CommandError(
            f"{argv[0]}: a prompt is answered with a secret, but no secret source was given"
        )
    return _find_program(argv[0], env, cwd)


def _find_program(name: str, env: Mapping[str, str], cwd: str | None) -> str:
    if "/" in name:
        # Relative to cwd, as exec will see it after the chdir; absolute so that holds.
        path = Path(cwd or ".", name).absolute()
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        raise CommandError(f"{name}: no such executable file")
    search = env.get("PATH", "")
    found = shutil.which(name, path=search)
    if found is None:
        raise CommandError(f"{name}: not found on PATH {search!r}")
    return found


def _spawn_argv(program: str, rest: Sequence[str], null_stdin: bool) -> tuple[str, list[str]]:
    if not null_stdin:
        return program, list(rest)
    # T17: a prompt that slips through reads EOF instead of waiting; output still uses the pty.
    # `exec` keeps the pid, so the exit status and signals are the program's own.
    return "/bin/sh", ["-c", 'exec "$0" "$@" </dev/null', program, *rest]


def _spawn(
    command: str,
    args: list[str],
    env: Mapping[str, str],
    cwd: str | None,
    dimensions: tuple[int, int],
) -> pexpect.spawn[bytes]:
    # No logfile of any kind: pexpect's _log() writes what we send (passwords) to it.
    child: pexpect.spawn[bytes] = pexpect.spawn(
        command,
        args,
        env=dict(env),
        cwd=cwd,
        encoding=None,  # bytes: the log keeps raw bytes; decoding for display is ours
        echo=False,
        dimensions=dimensions,  # ptyprocess defaults to 24x80 (pexpect#787): output wraps
        maxread=READ_SIZE,
        use_poll=True,  # pexpect#47: select() fails once the process has fd >= 1024 open
    )
    return child


class _Clock:
    """The two clocks: a deadline for the whole command, and a silence watchdog."""

    def __init__(self, timeout_s: float, silence_timeout_s: float) -> None:
        self.started = time.monotonic()
        self.heard_at = self.started
        self._timeout_s = timeout_s
        self._silence_s = silence_timeout_s

    def heard(self, now: float) -> None:
        self.heard_at = now

    def expired(self, now: float) -> TimedOut | None:
        if now - self.started >= self._timeout_s:
            return "deadline"
        if now - self.heard_at >= self._silence_s:
            return "silence"
        return None

    def limit(self, which: TimedOut | None) -> float | None:
        if which is None:
            return None
        return self._timeout_s if which == "deadline" else self._silence_s


class _Outlet:
    """Raw bytes to the log (flushed every LOG_FLUSH_S); display lines to on_lines in batches."""

    def __init__(self, log: BinaryIO, on_lines: LineSink | None) -> None:
        self._log = log
        self._on_lines = on_lines
        self._pending: list[Sequence[str]] = []
        self._count = 0
        self._flushed_at = self._emitted_at = time.monotonic()

    def write(self, data: bytes) -> None:
        if data:
            self._log.write(data)

    def lines(self, lines: Sequence[str]) -> None:
        if self._on_lines is None or not lines:
            return
        self._pending.append(lines)
        self._count += len(lines)
        if self._count >= BATCH_LINES:
            self._emit(time.monotonic())

    def tick(self, now: float) -> None:
        if now - self._flushed_at >= LOG_FLUSH_S:
            self._log.flush()
            self._flushed_at = now
        if self._pending and now - self._emitted_at >= BATCH_S:
            self._emit(now)

    def flush(self) -> None:
        """Everything out now: before a person is asked, and at the end."""
        self._emit(time.monotonic())
        self._log.flush()
        self._flushed_at = time.monotonic()

    def _emit(self, now: float) -> None:
        blocks, self._pending, self._count = self._pending, [], 0
        self._emitted_at = now
        if blocks and self._on_lines is not None:
            self._on_lines(blocks[0] if len(blocks) == 1 else Joined(blocks))


class Joined(Sequence[str]):
    """Several blocks of display lines read as one batch, without reading (cleaning) them all."""

    def __init__(self, blocks: list[Sequence[str]]) -> None:
        self._blocks = blocks
        self._len = sum(len(block) for block in blocks)

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return self._span(start, stop)
        position = range(self._len)[index]  # IndexError as a list would raise it
        return self._span(position, position + 1)[0]

    def _span(self, start: int, stop: int) -> list[str]:
        found: list[str] = []
        offset = 0
        for block in self._blocks:
            end = offset + len(block)
            if end > start and offset < stop:
                found.extend(block[max(0, start - offset) : min(len(block), stop - offset)])
            offset = end
        return found

    def __iter__(self) -> Iterator[str]:
        for block in self._blocks:
            yield from block


class _Prompter:
    """Answers the prompts the plan expects, each occurrence once."""

    def __init__(
        self,
        child: pexpect.spawn[bytes],
        answers: Sequence[Answer],
        secrets: SecretSource | None,
        scrubber: Scrubber,
        outlet: _Outlet,
    ) -> None:
        self._child = child
        self._answers = answers
        self._secrets = secrets
        self._scrubber = scrubber
        self._outlet = outlet
        self._line = 0
        self._answered_at = 0

    def answer(self, tail: str, lines_done: int) -> bool:
        """Answer what the tail now asks; True when something was sent."""
        if lines_done != self._line or len(tail) < self._answered_at:
            self._line, self._answered_at = lines_done, 0  # a new line or a redraw: new prompts
        sent = False
        while (found := self._find(tail)) is not None:
            answer, self._answered_at = found
            self._send(answer, tail)
            sent = True
        return sent

    def _find(self, tail: str) -> tuple[Answer, int] | None:
        start = max(self._answered_at, len(tail) - MATCH_WINDOW)
        hits = [
            (match.end(), index)
            for index, answer in enumerate(self._answers)
            if (match := answer.pattern.search(tail, start)) and match.end() > self._answered_at
        ]
        if not hits:
            return None
        end, index = min(hits)
        return self._answers[index], end

    def _send(self, answer: Answer, tail: str) -> None:
        reply = answer.reply
        if isinstance(reply, SecretRef):
            if self._secrets is None:
                raise CommandError(f"{reply.name}: no secret source")  # checked before spawning
            self._outlet.flush()  # the log and the UI show what led here while a person types
            value = self._secrets(reply, tail.strip())
            self._scrubber.add(value)  # before sending, so an echo of it is already masked
            # The tty echoes what arrives while ECHO is still on, and a program turns it off only
            # after printing its prompt (pexpect commonissues "Timing issue with send()"). If it
            # never does, the scrubber still masks the echo.
            self._child.waitnoecho(timeout=SECRET_ECHO_WAIT_S)
        else:
            value = reply
        self._child.send((value + "\n").encode("utf-8"))


class _Session:
    """One command's output loop: read, scrub, log, display, answer, watch the clocks."""

    def __init__(
        self,
        child: pexpect.spawn[bytes],
        clock: _Clock,
        outlet: _Outlet,
        answers: Sequence[Answer],
        secrets: SecretSource | None,
    ) -> None:
        self._child = child
        self._clock = clock
        self._outlet = outlet
        self._scrubber = Scrubber()
        self.display = Display(self._scrubber)
        self._prompter = (
            _Prompter(child, answers, secrets, self._scrubber, outlet) if answers else None
        )
        self.bytes_out = 0

    def run(self) -> TimedOut | None:
        timed_out = self._pump()
        if timed_out is None:
            timed_out = self._await_exit()
        if timed_out is not None:
            kill_group(self._child, KILL_GRACE_S)
            self._prompter = None  # nobody is left to answer
            self._drain()
        self._emit(self._scrubber.flush())
        self._outlet.lines(self.display.finish())
        self._outlet.flush()
        return timed_out

    def _pump(self) -> TimedOut | None:
        while (expired := self._clock.expired(time.monotonic())) is None:
            try:
                chunk = self._child.read_nonblocking(READ_SIZE, timeout=POLL_S)
            except pexpect.TIMEOUT:
                chunk = b""
            except pexpect.EOF:
                return None
            self._take(chunk)
        return expired

    def _await_exit(self) -> TimedOut | None:
        # EOF means the pty closed; the exit status exists only once the leader is reaped.
        while self._child.isalive():
            expired = self._clock.expired(time.monotonic())
            if expired is not None:
                return expired
            time.sleep(0.01)
        return None

    def _drain(self) -> None:
        """Read what the killed group left in the pty, for the log; bounded by DRAIN_S."""
        end = time.monotonic() + DRAIN_S
        while time.monotonic() < end:
            try:
                self._take(self._child.read_nonblocking(READ_SIZE, timeout=POLL_S))
            except pexpect.TIMEOUT:
                continue
            except pexpect.EOF:
                return

    def _take(self, chunk: bytes) -> None:
        now = time.monotonic()
        self._outlet.tick(now)
        if not chunk:
            return
        self.bytes_out += len(chunk)
        self._clock.heard(now)
        self._emit(self._scrubber.feed(chunk))
        prompter = self._prompter
        if prompter is not None and prompter.answer(self.display.tail(), self.display.lines_done):
            self._clock.heard(time.monotonic())  # the wait for a person is not silence

    def _emit(self, data: bytes) -> None:
        self._outlet.write(data)
        self._outlet.lines(self.display.feed(data))
