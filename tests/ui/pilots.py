"""Driving the wizard in tests: wait for a stage's view, look at it, and mount one view alone.

Keys are pressed once: a view shows only once it is mounted and has the focus
(StageShell.show is awaited before the next answer is awaited), so a key pressed after
``shows`` holds is taken by that view.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from textual.app import App
from textual.pilot import Pilot
from textual.screen import Screen

from gpuwizard.core.facts import FreeSpace
from gpuwizard.runner import events as ev
from gpuwizard.runner.view import RunView
from gpuwizard.runner.view import view_of as view_of_run
from gpuwizard.screens.shell import Answered, StageShell, StageView
from gpuwizard.setup.flow import Answer, SkipStep, next_stage
from gpuwizard.setup.runs import skipped
from gpuwizard.setup.stages import Installing


async def until(pilot: Pilot[Any], condition: Callable[[], bool], timeout_s: float = 60) -> None:
    """Let the app run until ``condition`` holds (the runner works in another process)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out; {pilot.app.screen!r} shows {shown(pilot)!r}")
        await pilot.pause(0.05)


def shown(pilot: Pilot[Any]) -> StageView | None:
    shell = getattr(pilot.app, "shell", None)
    return shell.view if isinstance(shell, StageShell) else None


def view_of(pilot: Pilot[Any]) -> Any:
    """The stage view on show (typed loosely: tests read each view's own attributes)."""
    view = shown(pilot)
    assert view is not None, "no stage view is on show"
    return view


def shows(pilot: Pilot[Any], kind: type) -> Callable[[], bool]:
    """The view of that kind is the stage on show, mounted and focused: keys reach it."""

    def showing() -> bool:
        view = shown(pilot)
        return isinstance(view, kind) and view.is_mounted and pilot.app.screen is pilot.app.shell  # type: ignore[attr-defined]

    return showing


class ViewHarness(App[None]):
    """One stage view in the wizard's shell, with the wizard's title: for snapshots and for
    tests of one view. Its answers are kept in ``answers``."""

    TITLE = "gpuwizard"
    SUB_TITLE = "SIMULATION: a100x4-ubuntu2004-fresh"

    def __init__(self, view: StageView | Screen[Any], sub_title: str | None = None) -> None:
        super().__init__()
        self.shown = view
        if sub_title is not None:
            self.sub_title = sub_title
        self.shell = StageShell()
        self.answers: list[object] = []

    async def on_mount(self) -> None:
        if isinstance(self.shown, Screen):  # a modal screen (help, doctor, quit, secret), alone
            await self.push_screen(self.shown)
            return
        await self.push_screen(self.shell)
        await self.shell.show(self.shown)

    def on_answered(self, message: Answered) -> None:
        self.answers.append(message.answer)

    def action_help(self) -> None:
        pass

    def action_quit_wizard(self) -> None:
        self.exit()


_seq = itertools.count(1)


def envelopes(
    events: Sequence[ev.RunEvent], time: str = "2026-12-03T10:00:00.000+00:00"
) -> list[ev.Envelope]:
    return [ev.Envelope(next(_seq), time, event) for event in events]


def run_of(events: Sequence[ev.RunEvent]) -> RunView:
    """The run these events fold into, as the one loop hands it to a view."""
    return view_of_run(envelopes(events))


def after(stage: Installing, answer: Answer) -> Installing:
    """The install stage once the flow took a view's answer (a skip answered as the driver
    does), for tests of one view: the loop brings it to the view (``update``)."""
    following, effects = next_stage(stage, answer)
    assert isinstance(following, Installing), following
    for effect in effects:
        if isinstance(effect, SkipStep):
            following = replace(following, run=skipped(following.run))
    return following


class FakeMachine:
    """What an install view may ask of the machine: its file systems, and where logs go."""

    def __init__(self) -> None:
        self.file_systems: tuple[FreeSpace, ...] = (
            FreeSpace("/", 120 * 1024**3),
            FreeSpace("/var", 52 * 1024**2),
        )

    def free_space(self) -> tuple[FreeSpace, ...]:
        return self.file_systems

    @property
    def logs_hint(self) -> str:
        return "/var/lib/gpuwizard/logs"
