"""The shell keeps a view on show out of the garbage collector's walks, and frees the last one.

A full collection during a log flood walked every widget, style and render cache of the
install view, and a key waited behind it (tests/perf/bench_flood.py measures that wait).
"""

from __future__ import annotations

import gc
import weakref

import pytest
from textual.widgets import Static

from gpuwizard.screens import shell
from gpuwizard.screens.shell import StageView
from tests.ui.pilots import ViewHarness, until


class CyclicView(StageView):
    """A view that refers to itself: only the collector, never reference counting, frees it."""

    def __init__(self) -> None:
        super().__init__()
        self.me = self

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static("a view that refers to itself")


def in_a_collected_generation(target: object) -> bool:
    return any(candidate is target for candidate in gc.get_objects())


async def test_a_view_on_show_is_frozen() -> None:
    first = CyclicView()
    app = ViewHarness(first)
    async with app.run_test() as pilot:
        await until(pilot, lambda: app.shell.view is first)
        assert not in_a_collected_generation(first)
        second = app.shown = StageView()
        await app.shell.show(second)
        assert not in_a_collected_generation(second)
        await pilot.pause()


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_a_full_collection_frees_a_cycle_that_was_frozen() -> None:
    cycle = Cycle()
    gc.freeze()
    gone = weakref.ref(cycle)
    del cycle
    gc.collect()
    assert gone() is not None, "frozen, the collector does not see it"
    shell._collect_all()
    assert gone() is None


def test_a_full_collection_is_asked_for_once_a_minute_at_most(monkeypatch) -> None:
    monkeypatch.setattr(shell, "_collections", shell._Collections())
    clock = iter([1000.0, 1030.0, 1061.0])
    monkeypatch.setattr(shell.time, "monotonic", lambda: next(clock))
    asked: list[object] = []
    for _ in range(3):
        shell.settle_garbage(asked.append)
    assert asked == [shell._collect_all, shell._collect_all]  # at 1000 s and at 1061 s


async def test_rapid_changes_of_view_walk_the_whole_process_once_at_most(monkeypatch) -> None:
    monkeypatch.setattr(shell, "_collections", shell._Collections())
    full: list[int] = []
    monkeypatch.setattr(shell.gc, "collect", lambda generation=2: full.append(generation) or 0)
    app = ViewHarness(StageView())
    async with app.run_test() as pilot:
        for _ in range(20):
            view = app.shown = StageView()
            await app.shell.show(view)
            assert not in_a_collected_generation(view)
            await pilot.pause()
    assert full == [2]


@pytest.fixture(autouse=True)
def _frozen_objects_back_in_sight():
    """The next tests' collections see everything again (these tests freeze on purpose)."""
    yield
    gc.unfreeze()
