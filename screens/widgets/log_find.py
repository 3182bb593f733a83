"""Finding a word in the log pane: which shown line holds the next match, how many do, and a
highlighter that marks every match where it shows. Pure, apart from Rich's Text it styles.

The pane searches what it shows (its lines as wrapped), so a word cut by the wrap at the pane's
edge is not found; ``l`` (lines unwrapped, scrolled sideways) finds it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rich.highlighter import Highlighter
from rich.text import Text

FOUND_STYLE = "black on yellow"
TERM_SHOWN = 16
"""At most this many characters of the word in the pane's border, so "match 1/2" always fits."""


@dataclass(frozen=True)
class Found:
    term: str
    line: int | None
    """The shown line of this match; None: no line holds the word."""
    number: int = 0
    """Which match this is, counting from the top (1-based)."""
    count: int = 0
    """How many shown lines hold the word."""

    def describe(self) -> str:
        """For the pane's border: "'initramfs': match 1/2 · n next", or "... not found"."""
        term = self.term if len(self.term) <= TERM_SHOWN else self.term[: TERM_SHOWN - 1] + "…"
        if self.line is None:
            return f"{term!r} not found"
        more = " · n next" if self.count > 1 else ""
        return f"{term!r}: match {self.number}/{self.count}{more}"


def find(lines: Sequence[str], term: str, after: int | None = None) -> Found:
    """The first line holding ``term`` (case-insensitive) after line ``after`` (from the top
    when None), wrapping round to the top."""
    folded = term.casefold()
    holding = [i for i, line in enumerate(lines) if folded in line.casefold()]
    if not holding:
        return Found(term, None)
    start = -1 if after is None else after
    number = next((n for n, i in enumerate(holding) if i > start), 0)
    return Found(term, holding[number], number + 1, len(holding))


class FoundHighlighter(Highlighter):
    """Marks every occurrence of the word, in any case."""

    def __init__(self, term: str) -> None:
        self.pattern = re.compile(re.escape(term), re.IGNORECASE)

    def highlight(self, text: Text) -> None:
        for hit in self.pattern.finditer(text.plain):
            text.stylize(FOUND_STYLE, hit.start(), hit.end())
