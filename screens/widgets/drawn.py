"""Drawn: a widget that shows what its key stands for, drawn again only when the key changes.

A view sets ``key`` to the value its content depends on (a step, a failure, a line of text);
Textual's reactive compares it with the last one and repaints (and, for content whose size may
change, lays the screen out again) only when it differs. A flooding step brings twenty updates a
second to a view, and each layout measures the whole screen: nothing is redrawn that did not
change. The content is built from the key once, when it changes, and kept.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import RenderableType
from textual.reactive import reactive
from textual.widget import Widget

UNSET = object()
"""The key before a view sets one: nothing is drawn."""


class Drawn(Widget):
    DEFAULT_CSS = "Drawn { height: auto; }"

    key: reactive[object] = reactive(UNSET, layout=True)
    """What the content stands for; a new value draws it again (and lays the screen out)."""

    def __init__(
        self,
        draw: Callable[[object], RenderableType],
        *,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.draw = draw
        self.drawn: tuple[object, RenderableType] | None = None

    def render(self) -> RenderableType:
        key = self.key
        if key is UNSET:
            return ""
        if self.drawn is None or self.drawn[0] is not key:
            self.drawn = (key, self.draw(key))
        return self.drawn[1]


class DrawnLine(Drawn):
    """One line of fixed size: a new key repaints it in place, without a layout."""

    DEFAULT_CSS = "DrawnLine { height: 1; }"

    key: reactive[object] = reactive(UNSET, layout=False)
