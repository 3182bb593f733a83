"""Shell words and one-line text for the Dockerfile and Ansible exports.

``shell_word`` makes one bash word with exactly a value on one physical line; ``check_path``
refuses what no line-based format can carry (a line break or NUL in a path); ``one_line`` makes
text safe for a comment. Pure text functions.
"""

from __future__ import annotations

import re
import shlex

from gpuwizard.export.source import ExportError

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A name a shell accepts for an environment variable."""
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029\0")
_SAFE_WORD = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
_NAMED_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
RESERVED = frozenset((
    "!", "[[", "]]", "{", "}", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for",
    "function", "if", "in", "select", "then", "time", "until", "while",
))  # fmt: skip
"""bash's reserved words: a plain value like these is quoted, so that it is never read as one
(ShellCheck SC1010 reads ``fi`` as an argument inside an ``if`` as a misplaced keyword)."""


def plain_word(value: str) -> str:
    """``shlex.quote``, and a reserved word quoted too (shlex leaves ``fi`` bare)."""
    return f"'{value}'" if value in RESERVED else shlex.quote(value)


def check_path(path: str, what: str) -> str:
    """A path for a shell word, an ENV value or a comment: no line break, no NUL."""
    bad = sorted({repr(c) for c in path if c in _LINE_BREAKS})
    if bad:
        shown = path.encode("unicode_escape").decode("ascii")[:80]
        raise ExportError(f"{what} '{shown}' contains {', '.join(bad)}: choose a path without them")
    return path


def one_line(text: str) -> str:
    """Text for a ``#`` comment: every line break or control character becomes a space."""
    return "".join(c if c.isprintable() else " " for c in text)


def shell_word(value: str) -> str:
    """One bash word with exactly this value, on one physical line.

    Plain printable text uses ``shlex.quote``; text with ``$``, a backtick, a backslash or a
    non-printable character uses bash's ``$'...'`` with ``\\xHH`` byte escapes, so no line break
    reaches the Dockerfile and ShellCheck does not mistake a literal ``$x`` for a lost expansion.
    """
    if "\0" in value:
        raise ExportError(f"{value[:40]!r} contains NUL, which no command line can carry")
    if _SAFE_WORD.fullmatch(value) or all(c.isprintable() and c not in "$`\\" for c in value):
        return plain_word(value)
    escaped = []
    for c in value:
        if c in _NAMED_ESCAPES:
            escaped.append(_NAMED_ESCAPES[c])
        elif c.isprintable():
            escaped.append(c)
        else:
            escaped.extend(f"\\x{b:02x}" for b in c.encode("utf-8"))
    return "$'" + "".join(escaped) + "'"
