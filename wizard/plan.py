"""The plan: ordered steps and the exact actions each will take. The product the user reviews.

Actions are a closed vocabulary, ``Run | WriteFile``; every consumer (the executors, the dry run,
the review screen, the exporters) matches them exhaustively. Secrets are never values here, only
``SecretRef`` names that the runner resolves in memory. Pure data; JSON round-trips.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar

# Consumers end their match on Action with assert_never (in typing from Python 3.11).
if sys.version_info >= (3, 11):
    from typing import assert_never as assert_never
else:  # pragma: no cover - Python 3.10
    from typing_extensions import assert_never as assert_never

from gpuwizard.codec import CodecError, from_jsonable, to_jsonable
from gpuwizard.paths import DOWNLOADS_DIR

SCHEMA = 1

# Environment for every apt/dpkg call: no debconf questions, keep modified config files, no
# needrestart dialogs that restart services mid-step (reliability.md §3.3, §1.3).
APT_ENV: Mapping[str, str] = {
    "DEBIAN_FRONTEND": "noninteractive",
    "UCF_FORCE_CONFFOLD": "1",
    "NEEDRESTART_MODE": "l",
    "NEEDRESTART_SUSPEND": "1",
    "APT_LISTCHANGES_FRONTEND": "none",
}


class Target(Enum):
    """Where an action can be reproduced: on a host, and/or inside a container image."""

    HOST = "host"
    IMAGE = "image"


@dataclass(frozen=True)
class SecretRef:
    """A secret by name ("mok-password"); its value lives only in the runner's memory."""

    KIND: ClassVar[str] = "secret"
    name: str
    prompt: str
    """What the user is asked, in their words."""


@dataclass(frozen=True)
class Run:
    """Run one program. argv[0] is a tool name, resolved through the host's tool registry."""

    KIND: ClassVar[str] = "run"
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    answers: Mapping[str, str | SecretRef] = field(default_factory=dict)
    """Prompt regex -> reply: known prompts are answered, secrets come from the user."""
    creates: str | None = None
    """Skip when this path exists (exporters use it too)."""
    timeout_s: float = 3600
    """Hard deadline for the whole command."""
    silence_timeout_s: float = 600
    """No output for this long: show the last lines (usually a prompt) and stop."""
    retry_on_lock: bool = False
    """apt-get update: retry with backoff while another apt holds the lists lock."""
    ok_codes: tuple[int, ...] = (0,)
    """Exit codes that mean success (``cloud-init status --wait`` exits 2 when degraded)."""

    def display(self) -> str:
        """The command as a person reads it; an inline script shows as its size, not its text."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items() if k not in APT_ENV)
        shown = [f"<script, {a.count(chr(10)) + 1} lines>" if "\n" in a else a for a in self.argv]
        command = shlex.join(shown)
        return f"{env} {command}" if env else command


@dataclass(frozen=True)
class WriteFile:
    """Write a whole file atomically (temp file, fsync, rename), with a mode."""

    KIND: ClassVar[str] = "write"
    path: str
    """Absolute on the target; the executor joins it to the host root."""
    content: str
    mode: int = 0o644
    backup: bool = False
    """Keep the previous content and put it back if the step fails (daemon.json)."""

    def display(self) -> str:
        return f"write {self.path} ({len(self.content.splitlines())} lines, mode {self.mode:o})"


Action = Run | WriteFile


@dataclass(frozen=True)
class StepPlan:
    """One step as reviewed: what it is, why, and exactly what it will do on this host."""

    id: str
    title: str
    why: str
    actions: tuple[Action, ...]
    needs_reboot: bool = False
    """Its effect takes hold after the next boot; it is verified then."""
    reboot: bool = False
    """This step is a reboot: the runner stops and asks before running it."""
    targets: tuple[Target, ...] = (Target.HOST,)
    download_mib: int = 0
    """Estimated download size, for the review screen."""
    minutes: float = 0
    """Estimated duration on a typical cloud server."""

    @property
    def satisfied(self) -> bool:
        """Nothing to do on this host: the step's check already holds."""
        return not self.actions


@dataclass(frozen=True)
class Plan:
    schema: int
    steps: tuple[StepPlan, ...]
    summary: tuple[str, ...] = ()
    """The recommendation in one line each (driver, torch, python), shown and exported."""
    machine_id: str | None = None
    boot_id: str | None = None

    def step(self, step_id: str) -> StepPlan:
        return next(s for s in self.steps if s.id == step_id)

    def to_json(self) -> str:
        return json.dumps(to_jsonable(self), indent=2, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Plan:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise CodecError(f"plan is not JSON: {error.msg} at line {error.lineno}") from None
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise CodecError(f"$.schema: expected {SCHEMA}")
        return from_jsonable(cls, data)


def secrets_in(plan: Plan) -> tuple[SecretRef, ...]:
    """Every secret the plan will ask for, in order, without duplicates."""
    found: dict[str, SecretRef] = {}
    for step in plan.steps:
        for action in step.actions:
            if isinstance(action, Run):
                for reply in action.answers.values():
                    if isinstance(reply, SecretRef):
                        found.setdefault(reply.name, reply)
    return tuple(found.values())


def uses_downloads(action: Action) -> bool:
    """Whether an action reads or writes gpuwizard's download folder (which must stay root-only)."""
    inside = DOWNLOADS_DIR + "/"
    words = action.argv if isinstance(action, Run) else (action.path,)
    return any(word == DOWNLOADS_DIR or word.startswith(inside) for word in words)
