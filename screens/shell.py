"""The wizard's one screen: a Header, the view of the stage the wizard is at, and a Footer.

Stages change by swapping the view inside this screen, one awaited swap at a time, from the one
task that applies the state machine's transitions (wizard/frontends/app.py). Nothing pops or pushes
screens for a stage change, so no Header is ever torn down while its title update is still
queued (Textual issue #4258), and a key pressed during a swap reaches the new view once it is
mounted, never a view on its way out. Modal screens (help, doctor, quit, secret) open above.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Header

from gpuwizard.screens.widgets.key_footer import KeyFooter

if TYPE_CHECKING:
    from gpuwizard.setup.flow import Answer


class StageView(Vertical, can_focus=True):
    """One stage's content and keys. It answers through ``answer``; it never switches stages.

    The keys every view shares (screens/keymap.py) are bound here, so ``?`` opens the help
    and ``q`` asks before it quits on every view; a view adds only its own keys."""

    BINDINGS = [
        Binding("question_mark,f1", "app.help", "Help", key_display="?"),
        Binding("d", "app.doctor", "Doctor"),
        Binding("q", "app.quit_wizard", "Quit"),
    ]
    DEFAULT_CSS = "StageView { height: 1fr; }"
    FIRST_FOCUS: ClassVar[str | None] = None
    """The widget (a selector) that has the focus when the view shows; else its first focusable
    one, as a screen does (AUTO_FOCUS)."""

    def answer(self, answer: Answer) -> None:
        self.post_message(Answered(answer, self))

    def takes(self, stage: object) -> bool:
        """Whether this view shows ``stage`` by being brought up to date (``update``) rather than
        replaced: an install whose run moved on. Most views show one stage as it came."""
        del stage
        return False

    def update(self, stage: object) -> None:
        """Show ``stage``, which this view ``takes``."""
        raise TypeError(f"{type(self).__name__} does not take {type(stage).__name__}")


class Answered(Message):
    """A view's answer, for the task that applies transitions (it bubbles up to the app)."""

    def __init__(self, answer: Answer, view: StageView) -> None:
        super().__init__()
        self.answer = answer
        self.view = view


class StageShell(Screen[None]):
    DEFAULT_CSS = "StageShell #stage { height: 1fr; }"

    def __init__(self) -> None:
        super().__init__()
        self.view: StageView | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Vertical(id="stage")
        yield KeyFooter()

    async def show(self, view: StageView) -> None:
        """Replace the stage's view; returns once the new one is mounted and has the focus."""
        box = self.query_one("#stage", Vertical)
        await box.remove_children()
        self.view = view
        await box.mount(view)
        # As a screen does on showing (AUTO_FOCUS): the view's choice, else its first focusable
        # widget, else the view. Not scrolled to: before its first layout Textual cannot tell the
        # widget is in view and centres it, which put the first choice's label above the top of
        # Choose at 80x24; a view shows from its top.
        chosen = list(view.query(view.FIRST_FOCUS)) if view.FIRST_FOCUS else []
        focusable = [widget for widget in [*chosen, *view.query("*")] if widget.focusable]
        (focusable[0] if focusable else view).focus(scroll_visible=False)
        settle_garbage(self.call_after_refresh)


FULL_COLLECTION_EVERY_S = 60.0


@dataclass
class _Collections:
    last_full: float = -math.inf


_collections = _Collections()


def settle_garbage(later: Callable[[Callable[[], None]], object]) -> None:
    """Keep the objects of the view now mounted out of the collector's sight.

    A full collection walks every object it tracks, and a view on show is tens of thousands of
    them (widgets, styles, render caches): during a log flood a key waited behind that walk
    (~60 ms; tests/perf/bench_flood.py). Frozen once the view is mounted (gc.freeze costs
    nothing), they are walked no more; what the view drops meanwhile is freed by reference
    counting. A cycle among frozen objects waits for a full collection, which ``later`` runs
    once the new view is drawn (the last one is let go by then), at most once a minute: each
    walks the whole process, and a test run changes views thousands of times."""
    gc.freeze()
    now = time.monotonic()
    if now - _collections.last_full >= FULL_COLLECTION_EVERY_S:
        _collections.last_full = now
        later(_collect_all)


def _collect_all() -> None:
    gc.unfreeze()
    gc.collect()
    gc.freeze()
