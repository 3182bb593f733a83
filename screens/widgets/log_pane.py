"""LogPane: a live command log that stays responsive under any flood, and never holds more than it shows.

It follows the running step's log file itself (``follow``), through ``LogTail``: each frame reads
at most one window of new bytes, and on a reattach only the file's tail, so a 1 GB log costs what
a screenful does. Lines reach the screen once per frame (``FRAME_HZ``), at most ``LINES_PER_FRAME``
of them, through ``Backlog``: lines that arrive faster than anyone can read are left out, a
marker stands where they were, and the border counts them all. The Log widget keeps the last
``MAX_LINES``; the full log stays on disk. ``add`` takes lines from elsewhere (the wizard's own
notes, or a run's events when no log file is known).
Every line shown is cleaned by gpuwizard's one sanitiser (the file's lines in LogTail,
others here). No line is ever cut: it wraps at the pane's width (the default; at a space, or after a
``/`` or ``-`` in a long path, as the rest of the wizard's text does)
or scrolls sideways (``toggle_wrap``: a line cut at either edge is marked there with an arrow);
the pane can stop following the end (``toggle_follow``) and find a word (``search``: every match
is highlighted, and the border says which match of how many is in view).
While it follows, the newest line is in view after anything that moves it: new lines, a reattach,
a resize, a box above it that grows. Textual's Log scrolls to the end on a write only when it was
at the end before, so one layout change (the pane shrinking by a row) used to stop it for good.
Scrolling up stops following (the title says so); End, or ``f``, follows again.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from pathlib import Path

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.events import Resize
from textual.strip import Strip
from textual.widgets import Log

from gpuwizard.core.safetext import clean
from gpuwizard.runner.logtail import Backlog, Gap, LogTail, describe_gap
from gpuwizard.screens.breaking import break_offsets
from gpuwizard.screens.widgets.log_find import FoundHighlighter, find

FRAME_HZ = 25
FLOOD_FRAME_S = 0.1
"""While lines are being left out, a frame every 0.1 s: a flood scrolls by just as well, and
each frame redraws the screen (a scroll lays it out again), which the keys would wait for."""
LINES_PER_FRAME = 200
"""5,000 lines/s at 25 Hz: far more than anyone reads, far less than a flood."""
MAX_LINES = 5000
CUT_STYLE = Style(color="black", bgcolor="yellow", bold=True)
"""The arrow at an edge where a line goes on (scrolling sideways)."""


class LogPane(Log):
    DEFAULT_CSS = """
    LogPane {
        height: 1fr;
        border: round $primary-darken-2;
        padding: 0 1;
        overflow-x: hidden;
        overflow-y: scroll;
    }
    LogPane.-sideways { overflow-x: auto; }
    LogPane:focus { border: round $accent; border-title-style: bold; }
    """
    """Wrapped lines never need a horizontal scrollbar (it would take the bottom row)."""

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
        self.found_note = ""
        self.gap_note = ""
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
            self.keep_end()
            self.shown_at = now
        left_out = self.backlog.left_out
        self.flooding = left_out != before
        if left_out:
            where = f" · all in {self.following}" if self.following else ""
            self.gap_note = f"{describe_gap(left_out)} not shown{where}"
            self.show_notes()

    def show_notes(self) -> None:
        """The bottom border: the search first (short, it must show whole), then what was left out."""
        self.border_subtitle = " · ".join(note for note in (self.found_note, self.gap_note) if note)

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
        """The lines as shown: wrapped at the pane's width when wrapping (at a space, else after
        a / or -, as BreakingText does; a space at the break stays at the row's end, past the
        edge), else as they are."""
        width = self.wrapped_at = self.width_for_lines
        if not self.wrap or width < 8:
            return list(lines)
        shown: list[str] = []
        for line in lines:
            if len(line) <= width and (line.isascii() or cell_len(line) <= width):
                shown.append(line)
                continue
            cuts = [0, *break_offsets(line, width), len(line)]
            shown.extend(line[start:end] for start, end in itertools.pairwise(cuts))
        return shown

    def relayout(self) -> None:
        """Show every kept line again, laid out for the current width and mode."""
        self.clear()
        self.write_lines(self.shaped(self.source))
        self.keep_end()

    def on_resize(self, _event: Resize) -> None:
        """Any change of size: lines fold again for a new width, and the end stays in view."""
        if self.wrap and self.width_for_lines != self.wrapped_at:
            self.relayout()
        self.keep_end(later=True)

    def keep_end(self, later: bool = False) -> None:
        """While following, the newest line in view; ``later``: once the layout has settled."""
        if self.auto_scroll:
            self.scroll_end(animate=False, immediate=not later, x_axis=False)

    def stop_following(self) -> None:
        """Only where the key moves the view: a log that fits the pane keeps following."""
        if self.auto_scroll and self.max_scroll_y > 0:
            self.toggle_follow()

    # The person scrolls up to read: the pane stops following, else the next line pulls it back.
    def action_scroll_up(self) -> None:
        self.stop_following()
        super().action_scroll_up()

    def action_page_up(self) -> None:
        self.stop_following()
        super().action_page_up()

    def action_scroll_home(self) -> None:
        self.stop_following()
        super().action_scroll_home()

    def on_mouse_scroll_up(self) -> None:
        self.stop_following()

    def action_scroll_end(self) -> None:
        """End: the newest line, followed from now on."""
        if not self.auto_scroll:
            self.toggle_follow()
        super().action_scroll_end()

    def toggle_wrap(self) -> None:
        self.wrap = not self.wrap
        self.set_class(not self.wrap, "-sideways")
        self.relayout()
        self.show_mode()

    def render_line(self, y: int) -> Strip:
        """The row as Log draws it; scrolled sideways, an arrow marks an edge a line goes on past."""
        strip = super().render_line(y)
        row = self.scroll_offset.y + y
        if self.wrap or row >= len(self.lines):
            return strip
        left = self.scroll_offset.x
        width = min(strip.cell_length, self.scrollable_content_region.width)
        if width < 2:
            return strip
        if cell_len(self.lines[row]) > left + width:
            strip = Strip.join([strip.crop(0, width - 1), Strip([Segment("→", CUT_STYLE)], 1)])
        if left > 0 and self.lines[row]:
            strip = Strip.join([Strip([Segment("←", CUT_STYLE)], 1), strip.crop(1)])
        return strip

    def toggle_follow(self) -> None:
        self.auto_scroll = not self.auto_scroll
        if self.auto_scroll:
            self.scroll_end(animate=False)
        self.show_mode()

    def show_mode(self) -> None:
        """The top border, short enough to show whole in the narrowest pane (80 columns)."""
        wrap = "wrapped" if self.wrap else "scroll ←→"
        follow = "following" if self.auto_scroll else "not following"
        self.border_title = f"log · {wrap} · {follow}"

    def search(self, term: str, after: int | None = None) -> int | None:
        """Show the next shown line that holds ``term`` (from the top, or after line ``after``),
        wrapping round, with every match highlighted; stops following so it stays in view.
        Returns its line, or None."""
        if not term or not self.lines:
            return None
        found = find(self.lines, term, after)
        self.found_at = found.line
        self.found_note = found.describe()
        self.show_notes()
        self.highlight = True
        self.highlighter = FoundHighlighter(term)
        self.refresh_lines(0, len(self.lines))  # drawn again, with the new marks
        if found.line is None:
            return None
        self.auto_scroll = False
        self.scroll_to(y=max(0, found.line - 1), animate=False)
        self.show_mode()
        return found.line
