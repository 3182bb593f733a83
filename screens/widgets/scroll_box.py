"""ScrollBox: a scrolling box that takes the focus only while it has something hidden to scroll
to, and shows it has the focus. Tab then never lands on a box where the arrows would do nothing,
and never unseen. A view with a border on such a box colours the border instead."""

from __future__ import annotations

from textual.containers import VerticalScroll


class ScrollBox(VerticalScroll):
    DEFAULT_CSS = "ScrollBox:focus { background-tint: $accent 15%; }"

    def allow_focus(self) -> bool:
        return self.max_scroll_y > 0
