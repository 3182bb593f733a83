"""The plan: ordered steps and the exact operations each will take. The product the user reviews.

A step's actions are typed operations (``wizard/core/ops.py``), a closed set that every consumer (the
executor, the dry run, the review screen, the exporters) matches exhaustively. Secrets are never
values here, only ``SecretRef`` names that the runner resolves in memory. Pure data; JSON
round-trips. Schema 2 stores operations typed; a schema-1 plan (``Run(argv)``, from a run in
progress before an upgrade) is read through ``wizard/core/plan_v1.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any

from gpuwizard.core.codec import CodecError, from_jsonable, to_jsonable
from gpuwizard.core.ops import APT_ENV as APT_ENV
from gpuwizard.core.ops import Action as Action
from gpuwizard.core.ops import Command, Prefetch
from gpuwizard.core.ops import SecretRef as SecretRef
from gpuwizard.core.ops import WriteFile as WriteFile
from gpuwizard.core.ops import assert_never as assert_never
from gpuwizard.core.paths import DOWNLOADS_DIR
from gpuwizard.core.plan_v1 import upgrade_plan

SCHEMA = 2
"""2: operations are typed (``wizard/core/ops.py``); 1: every command was ``Run(argv)``."""


class Target(Enum):
    """Where an action can be reproduced: on a host, and/or inside a container image."""

    HOST = "host"
    IMAGE = "image"


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
    only_if_needed: bool = False
    """Expected not to run: its check is made again when its turn comes, and the steps before it
    should make it hold (the reboot that follows loading the driver live). The review says so."""
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
        plan: Plan = from_jsonable(cls, current_plan_data(data))
        return plan


def current_plan_data(data: Any, path: str = "$") -> Any:
    """A plan's JSON as schema 2: as it is, or read from schema 1 (``wizard/core/plan_v1.py``).

    Raises:
        CodecError: another schema (a newer gpuwizard wrote it), or a schema-1 plan that is damaged.
    """
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema == 1:
        return upgrade_plan(data, path)
    if schema != SCHEMA:
        raise CodecError(f"{path}.schema: expected {SCHEMA} (or 1), got {schema!r}")
    return data


def secrets_in(plan: Plan) -> tuple[SecretRef, ...]:
    """Every secret the plan will ask for, in order, without duplicates."""
    found: dict[str, SecretRef] = {}
    for step in plan.steps:
        for action in step.actions:
            # Only the open fallback answers prompts: no typed operation has a prompt.
            if isinstance(action, Command):
                for reply in action.answers.values():
                    if isinstance(reply, SecretRef):
                        found.setdefault(reply.name, reply)
    return tuple(found.values())


def uses_downloads(action: Action | Prefetch) -> bool:
    """Whether an action reads or writes gpuwizard's download folder (which must stay root-only)."""
    inside = DOWNLOADS_DIR + "/"
    words = (action.path,) if isinstance(action, WriteFile) else action.command().argv
    return any(word == DOWNLOADS_DIR or word.startswith(inside) for word in words)
