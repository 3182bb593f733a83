"""Follow a step's log file from the UI: read only its tail, show only what a person can read.

The runner writes every byte a command prints to the step's log file; the UI never holds or
parses more than it shows. ``LogTail`` reads at most one window of new bytes per poll: when more
arrived since the last poll, it seeks past them and counts their lines (``bytes.count`` in
bounded chunks, no decoding), and on a first look (a reattach) it reads only the file's last
window, however large the file is. ``Backlog`` holds the lines waiting for the next frame: at
most one frame's worth; older ones become one counted gap. Nothing here keeps a reference to
more than a window, a frame and one capped partial line, so memory stays bounded under any flood.

This module must never write to the log, never decode or keep a skipped byte, and never import
Textual (the widget that uses it lives in screens/).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gpuwizard.core.safetext import clean

WINDOW_BYTES = 64 * 1024
"""The most new bytes read (and parsed) per poll while following: ~650 lines of apt output."""
FIRST_WINDOW_BYTES = 256 * 1024
"""The most read on a first look at a file (a reattach): the tail, never the whole file."""
COUNT_CHUNK_BYTES = 1024 * 1024
COUNT_BUDGET_BYTES = 32 * 1024 * 1024
"""Skipped bytes beyond this per poll are reported as bytes rather than counted as lines."""
PARTIAL_KEEP_BYTES = 4096
"""Of a line without its newline yet, only this much of its start is kept."""
SHOWN_LINE_CHARS = 2000
"""Longer lines are cut for display (the log file keeps them whole)."""


@dataclass(frozen=True)
class TailUpdate:
    """What arrived in the log file since the last poll, as far as a person will see it."""

    lines: tuple[str, ...] = ()
    """New display lines, oldest first: at most one window of the newest output."""
    skipped_lines: int = 0
    """Lines passed over without being read into memory (they came faster than a window)."""
    skipped_bytes: int = 0
    """Bytes passed over whose lines were not counted (a reattach, or more than the budget)."""
    restarted: bool = False
    """The file shrank or was replaced: following went on from its new tail."""


@dataclass(frozen=True)
class Gap:
    """Lines left out of the pane, where they would have been."""

    lines: int = 0
    bytes: int = 0

    def __add__(self, other: Gap) -> Gap:
        return Gap(self.lines + other.lines, self.bytes + other.bytes)

    def __bool__(self) -> bool:
        return bool(self.lines or self.bytes)


class LogTail:
    """Follows one growing file; each ``poll`` reads at most one window.

    A file that shrank or whose inode changed is followed again from its tail; a file that is
    not there yet (the step has not written) or cannot be read gives empty updates.
    """

    def __init__(
        self,
        path: Path,
        window_bytes: int = WINDOW_BYTES,
        first_window_bytes: int = FIRST_WINDOW_BYTES,
    ) -> None:
        self.path = path
        self.window_bytes = window_bytes
        self.first_window_bytes = first_window_bytes
        self.offset: int | None = None
        """Bytes of the file consumed so far; None before the first look."""
        self.inode: int | None = None
        self.partial = b""
        """The start of a line whose newline has not arrived (at most PARTIAL_KEEP_BYTES)."""
        self.partial_cut = 0
        """Bytes of that line not kept."""
        self.bytes_read = 0
        """Bytes read into memory so far, for tests and benchmarks: never more than the windows."""

    def poll(self) -> TailUpdate:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return TailUpdate()
        try:
            return self._poll(fd, os.fstat(fd))
        except OSError:
            return TailUpdate()
        finally:
            os.close(fd)

    def _poll(self, fd: int, stat: os.stat_result) -> TailUpdate:
        restarted = self.offset is not None and (
            stat.st_ino != self.inode or stat.st_size < self.offset
        )
        if restarted:
            self.offset, self.partial, self.partial_cut = None, b"", 0
        self.inode = stat.st_ino
        if self.offset is None:
            return self._first_look(fd, stat.st_size, restarted)
        if stat.st_size == self.offset:
            return TailUpdate()
        return self._follow(fd, stat.st_size)

    def _first_look(self, fd: int, size: int, restarted: bool) -> TailUpdate:
        start = max(0, size - self.first_window_bytes)
        data = self._read(fd, start, size - start)
        self.offset = start + len(data)
        if start > 0:
            data = _after_first_newline(data)
        lines = self._lines(data)
        return TailUpdate(lines, 0, start, restarted)

    def _follow(self, fd: int, size: int) -> TailUpdate:
        assert self.offset is not None
        start = max(self.offset, size - self.window_bytes)
        skipped = Gap()
        if start > self.offset:
            skipped = self._count(fd, self.offset, start)
        data = self._read(fd, start, size - start)
        self.offset = start + len(data)
        if skipped:
            # The window starts inside a line whose beginning was skipped: that line is skipped too.
            head_end = data.find(b"\n") + 1
            self.partial, self.partial_cut = b"", 0
            if head_end == 0:
                self.partial_cut = len(data)  # still inside it: nothing to show yet
                return TailUpdate((), skipped.lines, skipped.bytes)
            data = data[head_end:]
            skipped += Gap(1, 0)
        return TailUpdate(self._lines(data), skipped.lines, skipped.bytes)

    def _count(self, fd: int, start: int, end: int) -> Gap:
        """Lines ended in [start, end), counted in chunks; past the budget, just the bytes."""
        counted_end = min(end, start + COUNT_BUDGET_BYTES)
        lines, position = 0, start
        while position < counted_end:
            chunk = os.pread(fd, min(COUNT_CHUNK_BYTES, counted_end - position), position)
            if not chunk:
                break
            lines += chunk.count(b"\n")
            position += len(chunk)
        return Gap(lines, end - position)

    def _read(self, fd: int, start: int, size: int) -> bytes:
        data = os.pread(fd, size, start)
        self.bytes_read += len(data)
        return data

    def _lines(self, data: bytes) -> tuple[str, ...]:
        """Complete lines of ``data`` (after any partial one kept from before) for display."""
        cut = data.rfind(b"\n")
        if cut < 0:
            self._keep_partial(data)
            return ()
        complete = self.partial + data[:cut]
        overlong = self.partial_cut
        self.partial, self.partial_cut = b"", 0
        self._keep_partial(data[cut + 1 :])
        lines = clean(complete.decode("utf-8", "replace")).split("\n")
        if overlong:
            lines[0] += f" … ({overlong:,} more bytes in the log file)"
        return tuple(_shown(line) for line in lines)

    def _keep_partial(self, data: bytes) -> None:
        room = PARTIAL_KEEP_BYTES - len(self.partial)
        self.partial += data[: max(0, room)]
        self.partial_cut += max(0, len(data) - max(0, room))


def _after_first_newline(data: bytes) -> bytes:
    """Drop the head of a window that starts inside a line; all of it when there is no newline."""
    return data[data.find(b"\n") + 1 :] if b"\n" in data else b""


def _shown(line: str) -> str:
    if len(line) <= SHOWN_LINE_CHARS:
        return line
    return f"{line[:SHOWN_LINE_CHARS]} … ({len(line) - SHOWN_LINE_CHARS:,} more characters)"


class Backlog:
    """Lines waiting for the next frame: at most ``per_frame`` entries; older ones become a gap.

    A gap stays where its lines would have been, so a frame reads in order: what came before it,
    ``[… N lines not shown …]``, what came after. ``take`` hands over one frame's lines; the
    running total of what was left out is kept for the pane's status.
    """

    def __init__(self, per_frame: int) -> None:
        self.per_frame = per_frame
        self._entries: deque[str | Gap] = deque()
        self._head = Gap()
        """Lines pushed out of the front by newer ones, shown as the frame's first line."""
        self.left_out = Gap()
        """Everything left out since the pane started, for a visible count."""

    def add(self, lines: Iterable[str], gap: Gap = Gap()) -> None:
        if gap:
            self.left_out += gap
            last = self._entries[-1] if self._entries else None
            if isinstance(last, Gap):
                self._entries[-1] = last + gap
            else:
                self._entries.append(gap)
        for line in lines:
            self._entries.append(line)
            if len(self._entries) > self.per_frame:
                self._push_out()

    def _push_out(self) -> None:
        oldest = self._entries.popleft()
        dropped = oldest if isinstance(oldest, Gap) else Gap(1, 0)
        self._head += dropped
        if not isinstance(oldest, Gap):
            self.left_out += dropped

    def take(self) -> list[str]:
        """One frame: the lines in order, each gap as one marker line."""
        shown = [gap_line(self._head)] if self._head else []
        shown.extend(gap_line(e) if isinstance(e, Gap) else e for e in self._entries)
        self._entries.clear()
        self._head = Gap()
        return shown

    def __len__(self) -> int:
        return len(self._entries)


def gap_line(gap: Gap) -> str:
    """The marker that stands where lines were left out."""
    return f"[… {describe_gap(gap)} not shown; the log file has everything …]"


def describe_gap(gap: Gap) -> str:
    """ "12,345 lines", "1.0 GB of earlier output", or both."""
    parts = []
    if gap.lines:
        parts.append(f"{gap.lines:,} line{'s' if gap.lines != 1 else ''}")
    if gap.bytes:
        parts.append(f"{human_bytes(gap.bytes)} of earlier output")
    return " and ".join(parts) or "nothing"


def human_bytes(size: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"
