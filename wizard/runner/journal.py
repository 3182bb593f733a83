"""The journal: the durable record of a run — the reviewed plan, the selection it came from, each
step's state, and the reboot in flight.

Written atomically (temp file, fsync, hard-link the old file to .bak, replace, fsync the
directory), mode 0600, with a schema version. An unreadable journal is never silently replaced:
the last good copy is offered, or the run stops with a message. The journal is a record; the
machine is the truth, so every state here is re-checked against fresh facts before it is acted
on. It never holds a secret.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from gpuwizard.core.codec import CodecError, from_jsonable, to_jsonable
from gpuwizard.core.facts import BootMark, BootSignal
from gpuwizard.core.plan import Plan, current_plan_data
from gpuwizard.core.selection import Selection
from gpuwizard.runner.failpoints import failpoint
from gpuwizard.runner.files import write_atomic

SCHEMA = 2
"""2: the selection keeps the request it was made from (1: only its optional parts, ``extras``)."""
MAX_REBOOTS_PER_STEP = 2
StepState = Literal["pending", "running", "awaiting_reboot", "done", "failed", "skipped", "left"]
"""``skipped``: nothing to do (the host had it already); ``left``: the person skipped it, so it
is not done, and the setup is named incomplete wherever it is reported (Done, export, doctor)."""
FINISHED_STATES = ("done", "skipped")
PASSED_STATES = (*FINISHED_STATES, "left")
"""States a run goes past: finished, or left undone by the person."""
SKIPPED_BY_YOU = "skipped by you"


class JournalError(RuntimeError):
    """The journal cannot be read or written; the message says what to do."""


@dataclass(frozen=True)
class StepRecord:
    id: str
    state: StepState = "pending"
    reason: str = ""
    attempts: int = 0
    reboots: int = 0
    """How many reboots this step has waited for; capped at MAX_REBOOTS_PER_STEP."""
    next_action: int = 0
    """Write-ahead: actions before this index finished; this one may have started."""


@dataclass(frozen=True)
class RebootRecord:
    step: str
    boot_id_before: str | None
    requested_at: str
    attempt: int
    commanded_at: str | None = None
    """When the reboot command ran; set with an unchanged boot_id, the reboot did not happen."""
    btime_before: int | None = None
    """/proc/stat's btime when the reboot was asked for: the fallback when the boot_id is unreadable."""
    signal: BootSignal | None = None
    """What the reboot will be judged by (boot_id, else btime, else the person's answer); None in
    journals from before."""

    @property
    def mark(self) -> BootMark:
        return BootMark(self.boot_id_before, self.btime_before)


@dataclass(frozen=True)
class BootAnswer:
    """A person's answer to "did this machine restart?", kept as the signal that judged a reboot
    when neither the boot_id nor /proc/stat's btime could be read (issue 14)."""

    step: str
    """The reboot step the answer was about."""
    rebooted: bool
    since: str
    """When the reboot was asked for: the question was "since then?"."""
    answered_at: str
    front_end: str
    """Which front end asked: "tui" or "apply" (its --rebooted flag)."""


@dataclass(frozen=True)
class JournalData:
    schema: int
    run_id: str
    machine_id: str | None
    plan: Plan
    selection: Selection
    steps: tuple[StepRecord, ...]
    reboot: RebootRecord | None = None
    finished: bool = False
    updated_at: str = ""
    skip_requested: tuple[str, ...] = field(default=())
    boot_answers: tuple[BootAnswer, ...] = field(default=())
    """Each time a person told whether the machine had restarted (no signal could tell)."""

    def record(self, step_id: str) -> StepRecord:
        return next(r for r in self.steps if r.id == step_id)

    @property
    def left(self) -> tuple[str, ...]:
        """The titles of the steps the person skipped (``left``): the setup is incomplete."""
        titles = {step.id: step.title for step in self.plan.steps}
        return tuple(titles.get(r.id, r.id) for r in self.steps if r.state == "left")


MAX_JOURNAL_BYTES = 16 * 1024 * 1024
"""A journal is a few dozen KiB; anything this large is damaged or hostile and is not read."""


def _read_bounded(path: Path) -> str:
    if path.stat().st_size > MAX_JOURNAL_BYTES:
        raise CodecError(f"{path.stat().st_size} bytes is far too large for a journal")
    return path.read_text(encoding="utf-8")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_journal(run_id: str, plan: Plan, selection: Selection) -> JournalData:
    records = tuple(StepRecord(s.id) for s in plan.steps)
    return JournalData(SCHEMA, run_id, plan.machine_id, plan, selection, records, updated_at=now())


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        seen = [key for key, _ in pairs]
        twice = next(key for key in seen if seen.count(key) > 1)
        raise CodecError(f"the key {twice!r} appears twice: the file was edited or is damaged")
    return data


def parse(text: str) -> JournalData:
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as error:
        raise CodecError(f"not JSON ({error.msg}, line {error.lineno})") from None
    schema = data.get("schema") if isinstance(data, dict) else None
    if not isinstance(data, dict) or schema not in (1, SCHEMA):
        raise CodecError(f"schema {schema!r} is not {SCHEMA}")
    if schema == 1:
        data = {**data, "schema": SCHEMA, "selection": _selection_v2(data.get("selection"))}
    # A run in progress when gpuwizard was upgraded has a schema-1 plan: read it typed.
    plan = current_plan_data(data.get("plan"), "$.plan")
    journal: JournalData = from_jsonable(JournalData, {**data, "plan": plan})
    return journal


def _selection_v2(selection: object) -> object:
    """A schema-1 journal's selection (a run in progress when gpuwizard was upgraded): its
    optional parts (``extras``) and its environment become the request it keeps. The pins it
    was asked with were not kept there, so they read as "let gpuwizard pick"."""
    if not isinstance(selection, dict) or not isinstance(selection.get("extras", {}), dict):
        return selection  # the codec names what is wrong
    kept = {k: v for k, v in selection.items() if k != "extras"}
    extras = dict(selection.get("extras", {}))
    env = selection.get("env")
    request = {k: v for k, v in extras.items() if k != "cuda_toolkit"}
    request["needs_nvcc"] = extras.get("cuda_toolkit") is not None
    if isinstance(env, dict) and isinstance(env.get("path"), str):
        request["env_kind"] = env.get("kind", "venv")
        request["env_name"] = env["path"].rsplit("/", 1)[-1]
    return {**kept, "request": request}


class Journal:
    """The journal file and its in-memory copy; every change is saved before it is acted on."""

    def __init__(self, path: Path, data: JournalData) -> None:
        self.path = path
        self.data = data

    @property
    def backup(self) -> Path:
        return self.path.with_name(self.path.name + ".bak")

    @classmethod
    def create(cls, path: Path, data: JournalData) -> Journal:
        journal = cls(path, data)
        journal.save()
        return journal

    @classmethod
    def load(cls, path: Path) -> Journal:
        """Read the journal; fall back to the last good copy, never to an empty one."""
        try:
            return cls(path, parse(_read_bounded(path)))
        except FileNotFoundError:
            raise JournalError(f"no journal at {path}: nothing to resume") from None
        except (CodecError, UnicodeDecodeError) as error:
            damaged = str(error)
        backup = path.with_name(path.name + ".bak")
        try:
            data = parse(_read_bounded(backup))
        except (FileNotFoundError, CodecError, UnicodeDecodeError):
            raise JournalError(
                f"{path} is damaged ({damaged}) and has no usable backup; finished steps cannot be told apart, "
                f"so nothing runs: inspect it, or move it away to start over"
            ) from None
        return cls(path, data)

    def save(self) -> None:
        text = json.dumps(to_jsonable(dataclasses.replace(self.data, updated_at=now())), indent=1)
        try:
            write_atomic(self.path, text.encode("utf-8"), 0o600, backup=self.backup)
        except OSError as error:
            raise JournalError(
                f"cannot save {self.path}: {error.strerror}; stopping before anything else runs"
            ) from None
        failpoint("journal.after_save")

    def update(self, step_id: str, **changes: Any) -> StepRecord:
        records = tuple(
            dataclasses.replace(r, **changes) if r.id == step_id else r for r in self.data.steps
        )
        if records != self.data.steps:  # an unchanged record costs no fsync
            self.data = dataclasses.replace(self.data, steps=records)
            self.save()
        return self.data.record(step_id)

    def record_reboot(
        self, step_id: str, reboot: RebootRecord | None, **changes: Any
    ) -> StepRecord:
        """Change a step and the reboot in flight in one save: a crash never leaves one of them."""
        records = tuple(
            dataclasses.replace(r, **changes) if r.id == step_id else r for r in self.data.steps
        )
        self.data = dataclasses.replace(self.data, steps=records, reboot=reboot)
        self.save()
        return self.data.record(step_id)

    def set(self, **changes: Any) -> None:
        self.data = dataclasses.replace(self.data, **changes)
        self.save()
