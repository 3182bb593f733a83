"""Follow a runner's events.jsonl: replay from the start, then tail as it grows.

Screen state is a fold over events, so attaching, reattaching after an SSH drop and starting
fresh are the same code (A2). A file that shrank or was replaced restarts from offset 0 with a
notice; a torn last line waits for its end; an unreadable line is reported, never fatal. One poll
reads at most ``READ_BYTES``, so a long history is replayed in steps, never held whole.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gpuwizard.core.codec import CodecError
from gpuwizard.runner.events import Envelope, decode


@dataclass(frozen=True)
class Restarted:
    """The file shrank or was replaced: everything is replayed from the start."""

    reason: str


@dataclass(frozen=True)
class BadLine:
    text: str
    reason: str


Item = Envelope | Restarted | BadLine
READ_BYTES = 1024 * 1024


class EventFollower:
    def __init__(self, path: Path, offset: int = 0) -> None:
        """``offset``: where to start (a resumed run's history was shown already)."""
        self.path = path
        self.offset = offset
        self.inode: int | None = None
        self.partial = b""

    def poll(self) -> list[Item]:
        """Everything new since the last call (no waiting)."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return []
        items: list[Item] = []
        replaced = self.inode is not None and stat.st_ino != self.inode
        if replaced or stat.st_size < self.offset:  # also a saved offset past a shorter file (T14)
            items.append(Restarted("the events file was replaced or truncated; replaying it"))
            self.offset, self.partial = 0, b""
        self.inode = stat.st_ino
        if stat.st_size == self.offset:
            return items
        data = self._read(stat.st_size)
        *lines, self.partial = (self.partial + data).split(b"\n")
        for raw in lines:
            text = raw.decode("utf-8", "replace")
            try:
                items.append(decode(text))
            except CodecError as error:
                items.append(BadLine(text[:200], str(error)))
        return items

    def _read(self, size: int) -> bytes:
        """The next READ_BYTES or so: more only to finish a line that is longer."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            data = b""
            while self.offset < size and (not data or b"\n" not in data):
                chunk = os.pread(fd, min(size - self.offset, READ_BYTES), self.offset)
                if not chunk:
                    break
                data += chunk
                self.offset += len(chunk)
            return data
        finally:
            os.close(fd)

    def follow(self, until: Callable[[], bool], interval_s: float = 0.1) -> Iterator[Item]:
        """Yield items until ``until()`` is true after a poll that found nothing new."""
        while True:
            items = self.poll()
            yield from items
            if not items and until():
                while rest := self.poll():  # what was written before it ended
                    yield from rest
                return
            if not items:
                time.sleep(interval_s)
