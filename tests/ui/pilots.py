"""Driving the wizard in tests: wait for a stage's view, look at it, and mount one view alone.

Keys are pressed once: a view shows only once it is mounted and has the focus
(StageShell.show is awaited before the next answer is awaited), so a key pressed after
``shows`` holds is taken by that view.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence
from typing import Any

from textual.app import App
from textual.pilot import Pilot
from textual.screen import Screen

from gpuwizard.core.facts import FreeSpace
from gpuwizard.runner import events as ev
from gpuwizard.screens.shell import Answered, StageShell, StageView
from gpuwizard.setup.disk import DiskState


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


class ScriptedEvents:
    def __init__(self, items: list[ev.Envelope]) -> None:
        self.items = items

    def poll(self) -> list[ev.Envelope]:
        items, self.items = self.items, []
        return items


class FakeRun:
    """A RunControl whose run history is scripted events; starting a runner adds nothing."""

    def __init__(self, events: Sequence[ev.RunEvent] = (), *, running: bool = False) -> None:
        self.history = envelopes(events)
        self.alive = running
        self.started: list[tuple[bool, bool]] = []
        self.skipped: list[str] = []
        self.secrets: list[str] = []
        self.rebooted: bool | None = None
        self.file_systems: tuple[FreeSpace, ...] = (
            FreeSpace("/", 120 * 1024**3),
            FreeSpace("/var", 52 * 1024**2),
        )

    def start(
        self, one_step: bool, check_only: bool = False, *, rebooted: bool | None = None
    ) -> bool:
        self.started.append((one_step, check_only))
        self.rebooted = rebooted
        return True

    def running(self) -> bool:
        return self.alive

    def events(self) -> ScriptedEvents:
        return ScriptedEvents(list(self.history))

    def skip(self, step_id: str) -> None:
        self.skipped.append(step_id)

    def send_secret(self, value: str) -> None:
        self.secrets.append(value)

    def disk(self) -> DiskState:
        return DiskState("none", None, None, None, None)

    def driven_elsewhere(self) -> bool:
        return False

    def free_space(self) -> tuple[FreeSpace, ...]:
        return self.file_systems

    @property
    def logs_hint(self) -> str:
        return "/var/lib/gpuwizard/logs"
