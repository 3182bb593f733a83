"""Text from outside gpuwizard, made safe for a terminal: the one sanitiser for what is printed.

Everything gpuwizard shows or prints may hold text it did not write: a recorded host's
os-release, dmesg, a training log, an answers file, a command's output. Such text can carry
terminal escapes (an OSC 52 clipboard write, an OSC 8 link, a title change, CSI 2J), bells,
8-bit C1 controls and Unicode format characters (U+202E reverses what follows; zero-width
characters hide text). ``clean`` removes all of them, keeping newlines and tabs; ``one_line``
also folds those into spaces; ``json_text`` writes JSON whose strings keep every character,
the unsafe ones as ``\\uXXXX`` escapes. ``CleanStream`` cleans whatever is written to a stream.
A file gpuwizard generates (an export) is data, not terminal text: it is never cleaned, which
would change what it says (a carriage return hides what came before it); ``first_unsafe`` finds
the character that makes its writer refuse it instead. Pure text functions, plus a stream
adapter that writes only where it is told to.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any, TextIO

# CSI, OSC (ended by BEL or ST), DCS/PM/APC/SOS strings, and two-character escapes. None may span
# a newline, so an unterminated sequence cannot swallow the lines after it.
ANSI = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[PX^_][^\x1b\n]*(?:\x1b\\)?|[ -/]*[0-~])"
)
ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
"""C0 controls but tab and newline, and DEL."""
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Controls (C0, C1), format characters (bidi overrides, zero-width), lone surrogates, and the
line and paragraph separators, which terminals and editors treat as line breaks."""
_KEPT = frozenset({ord("\n"), ord("\t")})
_CACHE_LIMIT = 1 << 16


class _UnsafeTable(dict[int, "int | None"]):
    """A ``str.translate`` table that deletes unsafe characters, built as characters are seen.

    Built lazily from ``unicodedata`` so that it follows the running Python's Unicode version
    and costs nothing for ASCII text.
    """

    def __missing__(self, code: int) -> int | None:
        unsafe = code not in _KEPT and unicodedata.category(chr(code)) in UNSAFE_CATEGORIES
        value = None if unsafe else code
        if len(self) < _CACHE_LIMIT:
            self[code] = value
        return value


_TABLE = _UnsafeTable()


def is_unsafe(char: str) -> bool:
    """Whether one character must never reach a terminal (newline and tab are safe)."""
    return _TABLE[ord(char)] is None


def clean(text: str) -> str:
    """Display form: no escapes, no control or format characters, carriage-return redraws
    collapsed to what the terminal would show; newlines and tabs kept."""
    if "\x1b" in text:
        text = ANSI.sub("", text)
    if "\r" in text:
        text = collapse(text)
    text = ASCII_CONTROL.sub("", text)
    return text if text.isascii() else _drop_unsafe(text)


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _drop_unsafe(text: str) -> str:
    """Non-ASCII text without its unsafe characters (judged once per distinct character)."""
    unsafe = {ord(c): None for c in set(_NON_ASCII.findall(text)) if _TABLE[ord(c)] is None}
    return text.translate(unsafe) if unsafe else text


def first_unsafe(text: str) -> int | None:
    """The offset of the first character ``clean`` would remove (an escape's ESC, a carriage
    return, a bidi control...), or None when every character is safe; newline and tab are."""
    found = ASCII_CONTROL.search(text)
    first = found.start() if found else None
    if text.isascii():
        return first
    for char in _NON_ASCII.finditer(text):
        if first is not None and char.start() > first:
            break
        if _TABLE[ord(char.group())] is None:
            return char.start()
    return first


def one_line(text: str) -> str:
    """``clean``, with line breaks and tabs as single spaces: for a value inside a sentence."""
    return " ".join(clean(text).split())


def collapse(text: str) -> str:
    """Each line as the terminal leaves it after its carriage-return redraws."""
    text = text.replace("\r\n", "\n").rstrip("\r")
    if "\r" not in text:
        return text
    return "\n".join(last_redraw(line) if "\r" in line else line for line in text.split("\n"))


def last_redraw(line: str) -> str:
    drawn = [part for part in line.split("\r") if part]
    return drawn[-1] if drawn else ""


def _escaped(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_text(data: Any, indent: int | None = 2) -> str:
    """JSON for a terminal: the same data, with every unsafe character as a ``\\u`` escape.

    ``json.dumps`` escapes C0 itself; DEL, C1, format characters and the rest can only sit
    inside JSON strings, where an escape means the same character, so a parser reads back
    exactly ``data``.
    """
    text = json.dumps(data, indent=indent, ensure_ascii=False).replace("\x7f", "\\u007f")
    if text.isascii():
        return text
    return "".join(_escaped(c) if ord(c) > 0x7F and is_unsafe(c) else c for c in text)


class CleanStream:
    """A text stream that passes everything written to it through ``clean`` first.

    Each write is cleaned on its own, so an escape split across two writes loses its ESC and
    its terminator either way: what is left is plain text.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(clean(text))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)
