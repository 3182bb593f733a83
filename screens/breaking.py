"""BreakingText: Rich text that wraps the way a person breaks a line: at spaces, and inside a word
too long for the line (a path, a package name) after a ``/`` or a ``-``; only a run with neither
is cut where the line ends. Rich (and Textual) fold such a word at the last column, mid-word
(``linux-headers-6.1.0-57-cloud-amd6`` / ``4``).

It wraps this way wherever Rich lays it out (a table cell, a group), and in a ``Static`` too:
``visualize`` asks Textual to render it through Rich rather than convert it to Textual's own
Content, which wraps like Rich. Pure: no terminal, no widget.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, JustifyMethod, OverflowMethod
from rich.containers import Lines
from rich.measure import Measurement
from rich.text import Text

BREAK_AFTER = frozenset("/-")
WORD = re.compile(r"\s*\S+\s*")
PIECES = re.compile(r"[^/\-\s]*[/\-]|[^/\-\s]+")


def words(text: str) -> Iterator[tuple[int, str]]:
    """(start, word and the spaces after it), as Rich splits a line into words."""
    for found in WORD.finditer(text):
        yield found.start(), found.group()


def cut_in(word: str, start: int, width: int) -> int:
    """Where the line that begins at ``start`` of a too-long word ends: after its last / or -
    that fits, else where the width runs out (at least one character on)."""
    cells, at, last_break = 0, start, None
    while at < len(word) and cells + cell_len(word[at]) <= width:
        cells += cell_len(word[at])
        at += 1
        if word[at - 1] in BREAK_AFTER and at < len(word):
            last_break = at
    return last_break or max(at, start + 1)


def break_offsets(text: str, width: int) -> list[int]:
    """Where to break ``text`` (one line, no newline) so that no line is wider than ``width``."""
    offsets: list[int] = []
    column = 0
    for start, word in words(text):
        size = cell_len(word.rstrip())
        if column + size <= width:
            column += cell_len(word)
            continue
        if column and start:
            offsets.append(start)
        at = 0
        while cell_len(word[at:].rstrip()) > width:
            at = cut_in(word, at, width)
            offsets.append(start + at)
        column = cell_len(word[at:])
    return offsets


class BreakingText(Text):
    def wrap(
        self,
        console: Console,
        width: int,
        *,
        justify: JustifyMethod | None = None,
        overflow: OverflowMethod | None = None,
        tab_size: int = 8,
        no_wrap: bool | None = None,
    ) -> Lines:
        """As Rich's ``Text.wrap``, breaking lines at ``break_offsets``."""
        if no_wrap or self.no_wrap or overflow == "ignore":
            return super().wrap(
                console, width, justify=justify, overflow=overflow, tab_size=tab_size, no_wrap=True
            )
        wrap_justify: JustifyMethod = justify or self.justify or "default"
        wrap_overflow: OverflowMethod = overflow or self.overflow or "fold"
        lines = Lines()
        for line in self.split(allow_blank=True):
            if "\t" in line:
                line.expand_tabs(tab_size)
            pieces = line.divide(break_offsets(line.plain, width))
            for piece in pieces:
                piece.rstrip_end(width)
            pieces.justify(console, width, justify=wrap_justify, overflow=wrap_overflow)
            for piece in pieces:
                piece.truncate(width, overflow=wrap_overflow)
            lines.extend(pieces)
        return lines

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """The narrowest it can go is its longest piece between breaks, not its longest word."""
        widest = super().__rich_measure__(console, options)
        pieces = [cell_len(p) for p in PIECES.findall(self.plain)]
        return Measurement(min(max(pieces, default=0), widest.minimum), widest.maximum)

    def visualize(self) -> Text:
        """For Textual: render this through Rich, so its ``wrap`` is the one used."""
        return self
