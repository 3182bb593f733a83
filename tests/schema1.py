"""Plans as gpuwizard wrote them before operations were typed (plan schema 1), for tests.

``v1_plan(plan)`` is the JSON the schema-1 gpuwizard wrote for the same plan: every command a
``run`` action with its argv, environment, prompts, limits, exit codes and lock retry (only
``apt-get update`` retried; no ``-I`` after a Python, which came with issue 28).
tests/unit/test_plan_v1.py checks it against runs that gpuwizard really wrote
(tests/golden/plans-v1.json), so a resume test can start from a journal of its making.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpuwizard.core.codec import to_jsonable
from gpuwizard.core.isolation import ISOLATED
from gpuwizard.core.ops import Action, AptUpdate, WriteFile
from gpuwizard.core.plan import Plan
from gpuwizard.steps.verify_torch import VERIFY_SCRIPT

V1_RUNS = Path(__file__).parent / "golden" / "plans-v1.json"
VERIFY_PLACEHOLDER = "<VERIFY_SCRIPT>"
"""The fixture keeps verify-torch's probe script once, as this word."""


def v1_action(action: Action) -> dict[str, Any]:
    if isinstance(action, WriteFile):
        data: dict[str, Any] = to_jsonable(action)
        return data
    run = action.command()
    return {
        "kind": "run",
        "argv": without_isolation(run.argv),
        "env": dict(run.env),
        "answers": to_jsonable(run.answers),
        "creates": run.creates,
        "timeout_s": run.timeout_s,
        "silence_timeout_s": run.silence_timeout_s,
        "retry_on_lock": isinstance(action, AptUpdate),
        "ok_codes": list(run.ok_codes),
    }


def without_isolation(argv: tuple[str, ...] | list[str]) -> list[str]:
    """The argv as schema 1 wrote it: no ``-I`` after a Python (issue 28 added it)."""
    words = list(argv)
    if words[1:2] == [ISOLATED] and words[2:3] in (["-m"], ["-c"]):
        return [words[0], *words[2:]]
    return words


def v1_plan(plan: Plan) -> dict[str, Any]:
    data: dict[str, Any] = to_jsonable(plan)
    data["schema"] = 1
    for step, planned in zip(data["steps"], plan.steps, strict=True):
        step["actions"] = [v1_action(a) for a in planned.actions]
    return data


def recorded_runs() -> tuple[list[dict[str, Any]], dict[str, dict[str, list[int]]]]:
    """(the distinct runs, case -> step id -> their indexes), the probe script put back."""
    doc = json.loads(V1_RUNS.read_text(encoding="utf-8"))
    runs = [
        {**run, "argv": [VERIFY_SCRIPT if w == VERIFY_PLACEHOLDER else w for w in run["argv"]]}
        for run in doc["runs"]
    ]
    return runs, doc["cases"]
