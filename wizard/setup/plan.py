"""From a request to a reviewed-to-be plan: recommend, select, plan, and (replaying an answers
file) refuse a server the answers were not made for. Pure: the table and the facts come in.

Both front ends and ``gpuwizard export`` plan through here, so a request resolves the same way
wherever it was made.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.plan import Plan
from gpuwizard.core.request import SetupRequest
from gpuwizard.core.selection import Selection
from gpuwizard.export.answers import Answers, misfits
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.existing import use_env_problem
from gpuwizard.recommend.planner import OptionsError, plan_for
from gpuwizard.recommend.result import Refusal
from gpuwizard.recommend.table import CompatTable
from gpuwizard.recommend.target import BadInput, target_from_facts
from gpuwizard.setup.flow import EXIT_BAD_INPUT, EXIT_UNSUPPORTED, Planned, PlanRefused
from gpuwizard.steps.base import PlanError


@dataclass(frozen=True)
class Replay:
    """An answers file replayed on this server (``apply --config``)."""

    answers: Answers
    accept_changes: bool = False
    """Plan even where the answers resolve to a different plan here."""
    force: bool = False
    """Plan even on a host unlike the one the answers were made on (deploy.sh's --force)."""
    force_flag: str = "--force (GPUWIZARD_FORCE=1)"
    """How the person waives the host check, named in the refusal."""


def plan_request(
    table: CompatTable, facts: HostFacts, request: SetupRequest, replay: Replay | None = None
) -> Planned | PlanRefused:
    if (problem := use_env_problem(facts, table, request)) is not None:
        return PlanRefused(problem, EXIT_BAD_INPUT)
    try:
        result = recommend(table, target_from_facts(facts, table), request)
    except BadInput as error:  # pins are checked on the way in; this is the last guard
        return PlanRefused(str(error), EXIT_BAD_INPUT)
    if isinstance(result, Refusal):
        misfit = misfits(replay.answers, facts) if replay else []
        why = f"the answers do not fit this server: {'; '.join(misfit)}; " if misfit else ""
        return PlanRefused(
            f"{why}nothing to install: {result.reason}", EXIT_UNSUPPORTED, no_gpu=not result.gpus
        )
    try:
        selection, plan = plan_for(facts, result, request, table)
    except (OptionsError, PlanError) as error:
        return PlanRefused(str(error), EXIT_BAD_INPUT)
    if replay is not None and (refused := replay_refused(replay, facts, plan)) is not None:
        return refused
    return Planned(request, selection, plan)


def replay_refused(replay: Replay, facts: HostFacts, plan: Plan) -> PlanRefused | None:
    """A host unlike the answers' (the one host rule, each difference named), else a plan that
    resolves differently here; each with its own override. None: the answers fit."""
    differ = [] if replay.force else misfits(replay.answers, facts)
    if differ:
        return PlanRefused(
            f"this server is not the kind the answers were made for: {'; '.join(differ)}. "
            f"Nothing was changed; pass {replay.force_flag} to replay them here anyway",
            EXIT_UNSUPPORTED,
        )
    changed = different_plan(replay.answers, plan)
    if changed and not replay.accept_changes:
        return PlanRefused(
            f"the answers do not fit this server: {changed} "
            "(nothing was changed; pass --accept-changes to plan it anyway)",
            EXIT_UNSUPPORTED,
        )
    return None


def different_plan(answers: Answers, plan: Plan) -> str | None:
    """How the plan resolved here differs from the one the answers recorded (None: the same)."""
    changed = [f"{a} -> {b}" for a, b in zip(answers.plan, plan.summary, strict=False) if a != b]
    if len(answers.plan) != len(plan.summary) or changed:
        return "here they resolve to a different plan: " + ("; ".join(changed) or "other steps")
    return None


def has_work(plan: Plan) -> bool:
    return any(not step.satisfied for step in plan.steps)


class PlanningError(ValueError):
    """The request cannot be planned here; ``code`` is the exit code (2 bad input, 3 unsupported)."""

    def __init__(self, refused: PlanRefused) -> None:
        super().__init__(refused.why)
        self.code = refused.code


def make_plan(
    table: CompatTable, facts: HostFacts, request: SetupRequest, replay: Replay | None = None
) -> tuple[Plan, Selection]:
    """``plan_request`` for callers that want the plan or an exception (export, tests)."""
    result = plan_request(table, facts, request, replay)
    if isinstance(result, PlanRefused):
        raise PlanningError(result)
    return result.plan, result.selection
