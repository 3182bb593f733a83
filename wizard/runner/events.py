"""Runner events: what happened, as frozen facts, and their versioned JSON-lines codec.

The runner appends one line per event to events.jsonl; the TUI and the headless front end fold
the same lines into what they show, so attaching after an SSH drop is a replay from offset 0.
Every line carries ``schema`` and ``seq``; a line with an unknown schema fails loudly. Events
never carry a secret: a secret prompt is announced by name only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from typing import ClassVar, Literal

from gpuwizard.core.codec import CodecError, from_jsonable, to_jsonable
from gpuwizard.core.facts import BootSignal

SCHEMA = 1


@dataclass(frozen=True)
class RunStarted:
    KIND: ClassVar[str] = "run-started"
    run_id: str
    pid: int
    boot_id: str | None
    steps: tuple[str, ...]


@dataclass(frozen=True)
class RebootDetected:
    """On start: the boot changed since the reboot was requested, so it happened."""

    KIND: ClassVar[str] = "reboot-detected"
    boot_id_before: str | None
    boot_id_now: str | None
    signal: BootSignal = "boot_id"
    """What told the boots apart: the boot_id, else (unreadable) /proc/stat's btime."""
    btime_before: int | None = None
    btime_now: int | None = None


@dataclass(frozen=True)
class StepStarted:
    KIND: ClassVar[str] = "step-started"
    step: str
    title: str
    attempt: int
    log: str | None = None
    """The step's log file, which a live view follows (its output is there, not in events)."""


@dataclass(frozen=True)
class StepSkipped:
    KIND: ClassVar[str] = "step-skipped"
    step: str
    reason: str
    by_you: bool = False
    """The person skipped it (it is left undone); else the host had it already."""


@dataclass(frozen=True)
class ActionStarted:
    KIND: ClassVar[str] = "action-started"
    step: str
    index: int
    command: str


@dataclass(frozen=True)
class LogLines:
    KIND: ClassVar[str] = "log"
    step: str
    lines: tuple[str, ...]
    dropped: int = 0
    """Lines left out of the event stream during a flood; the step's log file has them all."""


@dataclass(frozen=True)
class ActionFinished:
    KIND: ClassVar[str] = "action-finished"
    step: str
    index: int
    ok: bool
    result: str
    """"exited 0", "killed by SIGKILL", "no output for 600 s; last line: '...'"."""


@dataclass(frozen=True)
class PromptShown:
    """A command waits for input only a person can give (a password, an unknown question)."""

    KIND: ClassVar[str] = "prompt"
    step: str
    text: str
    secret: str | None = None
    """The SecretRef name when the answer is a secret; it travels over the answer socket only."""


@dataclass(frozen=True)
class StepAwaitingReboot:
    KIND: ClassVar[str] = "step-awaiting-reboot"
    step: str
    reason: str


@dataclass(frozen=True)
class StepFinished:
    KIND: ClassVar[str] = "step-finished"
    step: str
    ok: bool
    reason: str
    log: str | None = None
    """The step's full log file."""


@dataclass(frozen=True)
class RebootRequested:
    KIND: ClassVar[str] = "reboot-requested"
    step: str
    boot_id: str | None
    attempt: int
    reason: str
    signal: BootSignal = "boot_id"
    """What the reboot will be judged by once the machine is back."""


class StopReason(str, Enum):
    """Why a runner stopped before the end; the values are what events.jsonl has always held."""

    PAUSED = "paused"
    """One step done (or the check after a reboot): waiting for the person's go-ahead."""
    REBOOT = "reboot"
    FAILED = "failed"
    CHANGED = "changed"
    """The host changed since the plan was reviewed: plan and review again."""
    STOPPED = "stopped"
    BOOT_UNKNOWN = "boot-unknown"
    OTHER_MACHINE = "other-machine"
    CRASHED = "crashed"
    NO_RUNNER = "no-runner"
    """Written by a front end: the runner never came up."""


@dataclass(frozen=True)
class RunStopped:
    """The runner stopped before the end: a failure, a reboot to confirm, a changed host."""

    KIND: ClassVar[str] = "run-stopped"
    reason: StopReason
    why: str
    step: str | None = None


@dataclass(frozen=True)
class RunFinished:
    KIND: ClassVar[str] = "run-finished"
    ok: bool
    summary: str


AheadState = Literal["started", "waiting", "done", "failed"]


@dataclass(frozen=True)
class FetchedAhead:
    """What fetching ahead did, as the runner saw it: a round started (``step`` None), the runner
    waits for a later step's downloads (before that step, or before the reboot), or one step's
    downloads ended. It never fails a step: a step whose downloads failed fetches them itself."""

    KIND: ClassVar[str] = "fetched-ahead"
    state: AheadState
    step: str | None
    detail: str


RunEvent = (
    RunStarted
    | RebootDetected
    | StepStarted
    | StepSkipped
    | ActionStarted
    | LogLines
    | ActionFinished
    | PromptShown
    | StepAwaitingReboot
    | StepFinished
    | RebootRequested
    | RunStopped
    | RunFinished
    | FetchedAhead
)


@dataclass(frozen=True)
class Envelope:
    seq: int
    time: str
    event: RunEvent


def encode(seq: int, event: RunEvent, now: datetime | None = None) -> str:
    """One JSON line (with the trailing newline)."""
    stamp = (now or datetime.now(timezone.utc)).isoformat(timespec="milliseconds")
    payload = {"schema": SCHEMA, "seq": seq, "time": stamp, "event": to_jsonable(event)}
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n"


def decode(line: str) -> Envelope:
    """Parse one line; raises CodecError for a torn line or an unknown schema."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        raise CodecError(f"event line is not JSON: {error.msg}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else None
        raise CodecError(
            f"event schema {found!r} is not {SCHEMA}: a newer or older gpuwizard wrote this file"
        )
    envelope: Envelope = from_jsonable(Envelope, {k: v for k, v in data.items() if k != "schema"})
    return envelope
