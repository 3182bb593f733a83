"""LogPane: a live command log that stays responsive under any flood, and never holds more than it shows.

It follows the running step's log file itself (``follow``), through ``LogTail``: each frame reads
at most one window of new bytes, and on a reattach only the file's tail, so a 1 GB log costs what
a screenful does. Lines reach the screen once per frame (``FRAME_HZ``), at most ``LINES_PER_FRAME``
of them, through ``Backlog``: lines that arrive faster than anyone can read are left out, a
marker stands where they were, and the border counts them all. The Log widget keeps the last
``MAX_LINES``; the full log stays on disk. ``add`` takes lines from elsewhere (the wizard's own
notes, or a run's events when no log file is known).
Every line shown is cleaned by gpuwizard's one sanitiser (the file's lines in LogTail,
others here). No line is ever cut: it wraps at the pane's width (the default, as a terminal does)
or scrolls sideways (``toggle_wrap``); the pane can stop following the end (``toggle_follow``) and
find a word (``search``).
"""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path

from rich.cells import chop_cells
from textual.events import Resize
from textual.widgets import Log

from gpuwizard.core.safetext import clean
from gpuwizard.runner.logtail import Backlog, Gap, LogTail, describe_gap

FRAME_HZ = 25
FLOOD_FRAME_S = 0.1
"""While lines are being left out, a frame every 0.1 s: a flood scrolls by just as well, and
each frame redraws the screen (a scroll lays it out again), which the keys would wait for."""
LINES_PER_FRAME = 200
"""5,000 lines/s at 25 Hz: far more than anyone reads, far less than a flood."""
MAX_LINES = 5000


class LogPane(Log):
    DEFAULT_CSS = """
    LogPane {
        height: 1fr;
        border: round $primary-darken-2;
        padding: 0 1;
    }
    """

    def __init__(
        self, max_lines: int = MAX_LINES, lines_per_frame: int = LINES_PER_FRAME, **kwargs: object
    ) -> None:
        super().__init__(max_lines=max_lines, auto_scroll=True, **kwargs)  # type: ignore[arg-type]
        self.backlog = Backlog(lines_per_frame)
        self.tail: LogTail | None = None
        self.received = 0
        """Lines that reached the pane, shown or left out (for benchmarks and tests)."""
        self.shown_at = 0.0
        self.flood_frame_s = FLOOD_FRAME_S
        self.flooding = False
        """The last frame left lines out."""
        self.wrap = True
        """Long lines wrap at the pane's width; False: they scroll sideways."""
        self.source: deque[str] = deque(maxlen=max_lines)
        """The lines as they came, to lay out again when the width or the wrap mode changes."""
        self.wrapped_at = 0
        self.found_at: int | None = None
        """The shown line of the last search match."""
        self.show_mode()

    def on_mount(self) -> None:
        self.set_interval(1 / FRAME_HZ, self.show_frame)

    @property
    def following(self) -> Path | None:
        """The log file followed, if any."""
        return self.tail.path if self.tail is not None else None

    def follow(self, path: Path | str | None) -> None:
        """Show this log file from its tail on; the same file again changes nothing."""
        target = Path(path) if path is not None else None
        if target == self.following:
            return
        self.take_from_file()  # the last of the previous file first, so nothing it ended with is lost
        self.tail = LogTail(target) if target is not None else None

    def add(self, lines: tuple[str, ...] | list[str], dropped: int = 0) -> None:
        """Lines that do not come from the followed file; ``dropped`` were left out before them."""
        self.received += len(lines) + dropped
        self.backlog.add([clean(line) for line in lines], Gap(dropped, 0))

    def show_frame(self) -> None:
        """Read what the file gained, then write one frame's lines in one batch."""
        now = time.monotonic()
        if self.flooding and now - self.shown_at < self.flood_frame_s:
            return
        before = self.backlog.left_out
        self.take_from_file()
        batch = self.backlog.take()
        if batch:
            self.source.extend(batch)
            self.write_lines(self.shaped(batch))
            self.shown_at = now
        left_out = self.backlog.left_out
        self.flooding = left_out != before
        if left_out:
            where = f" · all in {self.following}" if self.following else ""
            self.border_subtitle = f"{describe_gap(left_out)} not shown{where}"

    def take_from_file(self) -> None:
        if self.tail is not None:
            update = self.tail.poll()
            self.received += len(update.lines) + update.skipped_lines
            self.backlog.add(update.lines, Gap(update.skipped_lines, update.skipped_bytes))

    # ------------------------------------------------------------------------ wrap, follow, find
    @property
    def width_for_lines(self) -> int:
        return self.scrollable_content_region.width

    def shaped(self, lines: list[str] | deque[str]) -> list[str]:
        """The lines as shown: folded at the pane's width when wrapping, else as they are."""
        width = self.wrapped_at = self.width_for_lines
        if not self.wrap or width < 8:
            return list(lines)
        shown: list[str] = []
        for line in lines:
            shown.extend(
                chop_cells(line, width) if len(line) > width or not line.isascii() else [line]
            )
        return shown

    def relayout(self) -> None:
        """Show every kept line again, laid out for the current width and mode."""
        self.clear()
        self.write_lines(self.shaped(self.source))

    def on_resize(self, _event: Resize) -> None:
        if self.wrap and self.width_for_lines != self.wrapped_at:
            self.relayout()

    def toggle_wrap(self) -> None:
        self.wrap = not self.wrap
        self.relayout()
        self.show_mode()

    def toggle_follow(self) -> None:
        self.auto_scroll = not self.auto_scroll
        if self.auto_scroll:
            self.scroll_end(animate=False)
        self.show_mode()

    def show_mode(self, found: str = "") -> None:
        wrap = "wrapped" if self.wrap else "scroll ←→"
        follow = "following" if self.auto_scroll else "not following"
        self.border_title = f"log · {wrap} · {follow}{found}"

    def search(self, term: str, after: int | None = None) -> int | None:
        """Show the next shown line that holds ``term`` (from the top, or after line ``after``),
        wrapping round; stops following so it stays in view. Returns its line, or None."""
        lines = self.lines
        if not term or not lines:
            return None
        start = 0 if after is None else after + 1
        order = [*range(start, len(lines)), *range(min(start, len(lines)))]
        folded = term.casefold()
        hit: int | None = next((i for i in order if folded in lines[i].casefold()), None)
        self.found_at = hit
        if hit is None:
            self.show_mode(f" · {term!r} not found")
            return None
        self.auto_scroll = False
        self.scroll_to(y=max(0, hit - 1), animate=False)
        self.show_mode(f" · {term!r} at line {hit + 1}")
        return hit
