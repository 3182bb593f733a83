"""The one loop that drives a setup, for the TUI and ``gpuwizard apply`` alike.

It carries out the state machine's effects through ``Effects``, shows each stage through the
front end, and feeds the next answer back to ``next_stage``: the person's (the TUI's keys,
``apply``'s flags and prompts) or the run's (its progress, and its end, read as they are
written while a stage follows the run). A front end only shows and answers (``FrontEnd``); where
the setup goes is the flow's, and what happens to the machine ``Effects``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from gpuwizard.runner import events as ev
from gpuwizard.runner.view import RunView
from gpuwizard.setup.effects import Effects
from gpuwizard.setup.flow import (
    Answer,
    Effect,
    Exit,
    Following,
    Launched,
    RunEnded,
    RunProgressed,
    Stage,
    next_stage,
)

POLL_S = 0.05
"""How often a stage that follows the run looks at its events while nobody answers."""


class FrontEnd(Protocol):
    def show(self, stage: Stage) -> None:
        """Show the stage (again, when it changed in place: the run moved on)."""

    def heard(self, news: Sequence[ev.RunEvent], view: RunView) -> None:
        """The run's events as they are read (``view``: the run they fold into), before the
        stage they lead to is shown."""

    def answer(self, stage: Stage, wait_s: float | None) -> Answer | int | None:
        """The answer to ``stage``, or an exit code to stop with; None after waiting up to
        ``wait_s`` with nothing to say (``wait_s`` None: wait until there is an answer)."""

    def finish(self, exit: Exit) -> int:
        """The flow ends here: say its last words; the exit code."""


def conduct(effects: Effects, front: FrontEnd, stage: Stage, todo: Sequence[Effect]) -> int:
    """Run the flow from ``stage`` (the front end shows it already) and its first effects (``todo``)
    to the end; the exit code. A new kind of stage is shown before its effects are carried out
    (the machine is looked at while "Looking" shows)."""
    shown = stage
    while True:
        if todo and type(stage) is not type(shown):
            front.show(shown := stage)
        answer: Answer | int | None = None
        for effect in todo:
            if isinstance(effect, Exit):
                return front.finish(effect)
            answer = effects.carry_out(effect)
        if answer is None:
            if stage is not shown:
                front.show(shown := stage)
            answer = wait(effects, front, stage)
        if isinstance(answer, int):
            return answer
        if isinstance(answer, RunProgressed | RunEnded | Launched) and answer.news:
            front.heard(answer.news, effects.runs.view)
        stage, todo = next_stage(stage, answer)


def wait(effects: Effects, front: FrontEnd, stage: Stage) -> Answer | int:
    """The next answer: the front end's, or, while the stage follows the run, its progress."""
    following = isinstance(stage, Following)
    while True:
        if following and (progress := effects.runs.look()) is not None:
            if progress.ended:
                runs = effects.runs
                return RunEnded(effects.disk(), progress.view, progress.news, runs.deaths)
            return RunProgressed(progress.view, progress.news)
        answer = front.answer(stage, POLL_S if following else None)
        if answer is not None:
            return answer
