"""The install view redraws only what changed: while a step floods its log the runner sends
about twenty events a second, and each Static update lays the whole screen out again (the
flood benchmark's slowest key answers were those layouts: tests/perf/bench_flood.py)."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Static

from gpuwizard.core.plan import StepPlan
from gpuwizard.runner import events as ev
from gpuwizard.screens.install import InstallView, RunProgress
from gpuwizard.screens.widgets.step_list import StepList
from tests.ui.pilots import FakeRun, ViewHarness, envelopes, until
from tests.ui.test_snapshots import NOW, STARTED, plan


@pytest.fixture
def updates(monkeypatch: pytest.MonkeyPatch) -> list[Static]:
    """Every Static that was updated, in order."""
    seen: list[Static] = []
    update = Static.update

    def counted(self: Static, *args: Any, **kwargs: Any) -> None:
        seen.append(self)
        update(self, *args, **kwargs)

    monkeypatch.setattr(Static, "update", counted)
    return seen


def running_first_step() -> tuple[InstallView, StepPlan]:
    """The install view of the snapshot plan with its first step to do running."""
    first = next(s for s in plan().steps if not s.satisfied)
    running: list[ev.RunEvent] = [
        STARTED, ev.StepStarted(first.id, first.title, 1), ev.ActionStarted(first.id, 0, "x"),
    ]  # fmt: skip
    view = InstallView(plan(), FakeRun(running, running=True), attach=False, now=lambda: NOW)
    return view, first


async def test_a_flood_of_log_events_redraws_neither_the_steps_nor_the_details(
    updates: list[Static],
) -> None:
    view, first = running_first_step()
    app = ViewHarness(view)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: view.replayed and view.mode == "running")
        await pilot.pause()
        rows = set(view.query_one(StepList).rows.values())
        details, hint = view.query_one("#details", Static), view.query_one("#hint", Static)
        shown = details.content.renderables  # the running step's details
        assert str(shown[0]) == first.title and str(shown[-1]).startswith("$ ")
        updates.clear()

        for n in range(40):
            flood = ev.LogLines(first.id, (f"Get:{n} http://archive flood-package",), dropped=500)
            view.post_message(RunProgress(envelopes([flood]), first=False))
        await pilot.pause()
        redrawn = [w for w in updates if w in rows or w is details or w is hint]
        assert redrawn == [], f"{len(redrawn)} redraws for log lines"

        view.post_message(RunProgress(envelopes([ev.StepFinished(first.id, True, "done")]), False))
        await pilot.pause()
        assert [w for w in updates if w in rows] == [view.query_one(StepList).rows[first.id]]


async def test_a_failure_after_a_flood_replaces_the_hint_once(updates: list[Static]) -> None:
    view, first = running_first_step()
    async with ViewHarness(view).run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: view.replayed and view.mode == "running")
        hint = view.query_one("#hint", Static)
        updates.clear()
        stopped = ev.RunStopped(ev.StopReason.FAILED, "exited 100", first.id)
        for event in (ev.LogLines(first.id, ("E: broken",)), stopped, ev.LogLines(first.id, ())):
            view.post_message(RunProgress(envelopes([event]), first=False))
        await pilot.pause()
        assert view.mode == "failed"
        assert [w for w in updates if w is hint] == [hint]
        assert "exited 100" in str(hint.render())


async def test_a_retry_that_fails_alike_shows_its_own_last_lines() -> None:
    view, first = running_first_step()
    async with ViewHarness(view).run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: view.replayed and view.mode == "running")
        hint = view.query_one("#hint", Static)
        for attempt, line in ((1, "E: the first attempt"), (2, "E: the second attempt")):
            events: list[ev.RunEvent] = [
                ev.StepStarted(first.id, first.title, attempt),
                ev.LogLines(first.id, (line,)),
                ev.RunStopped(ev.StopReason.FAILED, "exited 100", first.id),
            ]
            view.post_message(RunProgress(envelopes(events), first=False))
            await pilot.pause()
            assert view.mode == "failed"
            assert line in str(hint.content)
