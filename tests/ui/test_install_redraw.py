"""The install view redraws only what changed: while a step floods its log the loop brings the
view about twenty updates a second, and each redraw of a part lays the whole screen out again
(the flood benchmark's slowest key answers were those layouts: tests/perf/bench_flood.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from textual.widgets import Static

from gpuwizard.core.plan import StepPlan
from gpuwizard.runner import events as ev
from gpuwizard.runner.view import view_of
from gpuwizard.screens.install import InstallView
from gpuwizard.screens.widgets.drawn import Drawn
from gpuwizard.screens.widgets.step_list import StepList
from tests.ui.pilots import FakeMachine, ViewHarness, envelopes
from tests.ui.test_snapshots import NOW, STARTED, installing, plan


@pytest.fixture
def updates(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every step row redrawn, and every part whose content was drawn anew, in order."""
    seen: list[object] = []
    update, render = Static.update, Drawn.render

    def counted(self: Static, *args: Any, **kwargs: Any) -> None:
        seen.append(self)
        update(self, *args, **kwargs)

    def drawn(self: Drawn) -> Any:
        if self.drawn is None or self.drawn[0] is not self.key:
            seen.append(self)
        return render(self)

    monkeypatch.setattr(Static, "update", counted)
    monkeypatch.setattr(Drawn, "render", drawn)
    return seen


def running_first_step() -> tuple[InstallView, StepPlan]:
    """The install view of the snapshot plan with its first step to do running."""
    first = next(s for s in plan().steps if not s.satisfied)
    running: list[ev.RunEvent] = [
        STARTED, ev.StepStarted(first.id, first.title, 1), ev.ActionStarted(first.id, 0, "x"),
    ]  # fmt: skip
    return InstallView(installing(running), FakeMachine(), now=lambda: NOW), first


def moved_on(view: InstallView, events: list[ev.RunEvent]) -> None:
    """The loop brings the view the run with ``events`` folded in (and, once they end it, the
    runner's end)."""
    run = view_of(envelopes(events), start=view.stage.run)
    view.update(replace(view.stage, run=run, awaiting=run.running))


async def test_a_flood_of_log_events_redraws_neither_the_steps_nor_the_details(
    updates: list[object],
) -> None:
    view, first = running_first_step()
    app = ViewHarness(view)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert view.mode == "running"
        rows = set(view.query_one(StepList).rows.values())
        details, hint = view.details, view.hint
        shown = details.drawn[1].renderables  # type: ignore[index, union-attr] # the running step's details
        assert str(shown[0]) == first.title and str(shown[-1]).startswith("$ ")
        updates.clear()

        for n in range(40):
            moved_on(view, [ev.LogLines(first.id, (f"Get:{n} http://archive flood-package",), 500)])
            await pilot.pause()
        redrawn = [w for w in updates if w in rows or w is details or w is hint]
        assert redrawn == [], f"{len(redrawn)} redraws for log lines"

        moved_on(view, [ev.StepFinished(first.id, True, "done")])
        await pilot.pause()
        assert [w for w in updates if w in rows] == [view.query_one(StepList).rows[first.id]]


async def test_a_failure_after_a_flood_replaces_the_hint_once(updates: list[object]) -> None:
    view, first = running_first_step()
    async with ViewHarness(view).run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        updates.clear()
        stopped = ev.RunStopped(ev.StopReason.FAILED, "exited 100", first.id)
        for event in (ev.LogLines(first.id, ("E: broken",)), stopped, ev.LogLines(first.id, ())):
            moved_on(view, [event])
        await pilot.pause()
        assert view.mode == "failed"
        assert [w for w in updates if w is view.hint] == [view.hint]
        assert "exited 100" in str(view.hint.render())


async def test_a_retry_that_fails_alike_shows_its_own_last_lines() -> None:
    view, first = running_first_step()
    async with ViewHarness(view).run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        for attempt, line in ((1, "E: the first attempt"), (2, "E: the second attempt")):
            moved_on(view, [
                ev.StepStarted(first.id, first.title, attempt),
                ev.LogLines(first.id, (line,)),
                ev.RunStopped(ev.StopReason.FAILED, "exited 100", first.id),
            ])  # fmt: skip
            await pilot.pause()
            assert view.mode == "failed"
            assert line in str(view.hint.render())


def test_the_progress_line_cuts_only_the_title_and_keeps_the_clock() -> None:
    """tui31's notice: at 80 columns a long title pushed "running 2:05" off the line."""
    from rich.console import Console

    from gpuwizard.screens.install_parts import Progress

    line = Progress(
        "1/9 done · now: ",
        "Prepare Secure Boot key enrollment (MOK) for every kernel",
        " · running 12:05",
    )
    console = Console(width=60, record=True, color_system=None)
    console.print(line)
    shown = console.export_text().rstrip("\n")
    assert "\n" not in shown and len(shown) <= 60, shown
    assert shown.startswith("1/9 done · now: Prepare") and shown.endswith("… · running 12:05"), (
        shown
    )


@pytest.mark.parametrize("rows", [18, 24])
async def test_a_running_step_s_log_has_rows_on_a_small_terminal(rows: int) -> None:
    """tui31's notice: at 80x18 the step's details took the whole column and the log pane was
    its two borders. While a step runs the log gets the room; the details give way."""
    from gpuwizard.screens.widgets.log_pane import LogPane
    from tests.ui.test_snapshots import FAILED_RUN

    view = InstallView(
        installing([STARTED, FAILED_RUN[1]], attach=True), FakeMachine(), now=lambda: NOW
    )
    app = ViewHarness(view)
    async with app.run_test(size=(80, rows)) as pilot:
        await pilot.pause(0.2)
        assert view.mode == "running"
        assert view.query_one(LogPane).content_size.height >= 3, (
            "lines of the log, not only borders"
        )
