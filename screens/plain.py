"""Text from outside the wizard, for the screens: sanitised, and never read as Rich markup.

Facts, plans, logs, doctor findings and benchmark events can hold text the machine wrote. A
plain ``str`` given to a Rich table cell, ``Static`` or ``notify`` is parsed as markup, so
``[@click=app.quit]`` in a fact would become a clickable action and ``[link=...]`` a spoofed
hyperlink; and an escape sequence would reach the terminal. Every such value goes through
``plain`` (a ``Text``, which Rich never parses) after gpuwizard's one sanitiser. Such text is
often a path or a package name: it wraps at spaces, and a word too long for its line breaks after
a ``/`` or ``-`` (``BreakingText``), never mid-word where another break would do.
"""

from __future__ import annotations

from rich.text import Text

from gpuwizard.core.safetext import clean
from gpuwizard.screens.breaking import BreakingText


def plain(text: str, style: str = "") -> Text:
    """External text as a Rich ``Text``: cleaned, and shown literally, never as markup."""
    return BreakingText(clean(text), style=style)


def part(text: str, style: str = "") -> tuple[str, str]:
    """External text as a ``Text.assemble`` part (parts are never markup), cleaned."""
    return clean(text), style
