"""A command's output as text: secrets masked in the raw bytes, and display lines for the UI.

``Scrubber`` masks secrets in the byte stream (holding back a tail that may begin one);
``Display`` turns raw bytes into display lines: decoded incrementally (a character split across
reads comes out whole), cleaned by gpuwizard's one sanitiser (``wizard/core/safetext.py``: escapes,
control and format characters dropped, carriage-return redraws collapsed to what the terminal
would show), overlong lines wrapped. Pure: no I/O.
"""

from __future__ import annotations

import codecs
from collections import deque
from collections.abc import Iterator, Sequence
from typing import overload

from gpuwizard.core.safetext import clean

MASK = "********"
MASK_BYTES = MASK.encode()
LAST_LINES = 20
MAX_LINE_CHARS = 65536
"""Longer display lines are wrapped, as a terminal would, so memory stays bounded (T28)."""


class Scrubber:
    """Masks secrets in the byte stream, holding back a tail that could be the start of one."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._raw: list[bytes] = []
        self._held = b""

    def add(self, secret: str) -> None:
        if secret and secret not in self._text:
            self._text.append(secret)
            self._raw.append(secret.encode("utf-8"))

    def feed(self, data: bytes) -> bytes:
        if not self._raw:
            return data
        data = self._held + data
        for secret in self._raw:
            data = data.replace(secret, MASK_BYTES)
        keep = max(prefix_overlap(data, secret) for secret in self._raw)
        self._held = data[len(data) - keep :]
        return data[: len(data) - keep]

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return held

    def text(self, line: str) -> str:
        for secret in self._text:
            line = line.replace(secret, MASK)
        return line


def prefix_overlap(data: bytes, secret: bytes) -> int:
    """Length of the longest proper prefix of ``secret`` that ``data`` ends with."""
    for size in range(min(len(secret) - 1, len(data)), 0, -1):
        if data.endswith(secret[:size]):
            return size
    return 0


def compact(partial: str) -> str:
    """Drop redraws already overwritten, so a progress bar without a newline stays small."""
    if "\r" not in partial:
        return partial
    cut = partial.rstrip("\r").rfind("\r")
    return partial[cut + 1 :] if cut >= 0 else partial


class CleanLines(Sequence[str]):
    """Display lines cleaned when read: a flood's lines are split and counted, and only the ones
    someone keeps (the event stream's share, the last lines) are ever cleaned."""

    def __init__(self, raw: list[str], scrubber: Scrubber) -> None:
        self._raw = raw
        self._scrubber = scrubber

    def __len__(self) -> int:
        return len(self._raw)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self._clean(raw) for raw in self._raw[index]]
        return self._clean(self._raw[index])

    def __iter__(self) -> Iterator[str]:
        return (self._clean(raw) for raw in self._raw)

    def _clean(self, raw: str) -> str:
        # Per line is the same as per chunk: no escape sequence or redraw spans a newline.
        return self._scrubber.text(clean(raw))


class Display:
    """Raw bytes -> display lines; keeps only the unterminated tail and the last lines."""

    def __init__(self, scrubber: Scrubber) -> None:
        # Incremental: a character split across two reads comes out whole (T29).
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._scrubber = scrubber
        self._partial = ""
        self._last: deque[Sequence[str]] = deque()
        """The newest blocks of lines, just enough to hold the last LAST_LINES (read at the end)."""
        self.lines_done = 0

    def feed(self, data: bytes) -> CleanLines:
        return self._split(self._partial + self._decoder.decode(data))

    def finish(self) -> list[str]:
        lines = list(self._split(self._partial + self._decoder.decode(b"", final=True)))
        tail = self.tail()
        self._partial = ""
        if tail:
            lines.append(tail)
            self._record([tail])
        return lines

    def tail(self) -> str:
        return self._scrubber.text(clean(self._partial))

    def _split(self, buf: str) -> CleanLines:
        cut = buf.rfind("\n")
        raw = buf[:cut].split("\n") if cut >= 0 else []
        rest = compact(buf[cut + 1 :])
        while len(rest) > MAX_LINE_CHARS:
            raw.append(rest[:MAX_LINE_CHARS])
            rest = rest[MAX_LINE_CHARS:]
        self._partial = rest
        lines = CleanLines(raw, self._scrubber)
        self._record(lines)
        return lines

    @property
    def last(self) -> list[str]:
        """The last <= LAST_LINES display lines."""
        lines = [line for block in self._last for line in block[-LAST_LINES:]]
        return lines[-LAST_LINES:]

    def _record(self, lines: Sequence[str]) -> None:
        if lines:
            self._last.append(lines)
            while sum(len(block) for block in list(self._last)[1:]) >= LAST_LINES:
                self._last.popleft()
        self.lines_done += len(lines)
