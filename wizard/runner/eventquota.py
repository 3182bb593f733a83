"""How much of a step's output goes into events.jsonl: a reader's share, never a flood's.

The step's log file has every byte; events.jsonl is the run's record of what happened, replayed
in full on every attach, so it must stay small whatever a command prints. Each step gets a
budget: a burst, then a steady rate a person can follow (in a few events a second), and a total;
lines beyond it are only counted (``dropped``), at most once a second. The lines a command ended with are always sent
when it finishes, since they usually name the error. Pure: no I/O, the clock is given.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

LINES_PER_S = 100
BURST_LINES = 500
STEP_LINES = 5000
"""The most lines of one step in events.jsonl (~0.5 MB); after that only counts."""
COUNT_EVERY_S = 1.0
STEADY_EVERY_S = 0.25
"""Past its burst, a step's lines go out at most this often (every event is replayed on attach)."""
TAIL_LINES = 20


@dataclass(frozen=True)
class Share:
    """One LogLines event's content: ``dropped`` lines were left out before ``lines``."""

    lines: tuple[str, ...]
    dropped: int


class LineQuota:
    """One step's budget of lines in the event stream."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        *,
        per_s: float = LINES_PER_S,
        burst: int = BURST_LINES,
        total: int = STEP_LINES,
    ) -> None:
        self._clock = clock
        self._per_s, self._burst, self._total = per_s, burst, total
        self._tokens = float(burst)
        self._refilled_at = clock()
        self._sent = 0
        self._unreported = 0
        """Lines left out and not yet counted in an event."""
        self._reported_at = -math.inf
        self._recent: deque[Sequence[str]] = deque()
        """The newest batches, just enough to hold TAIL_LINES (lines are cleaned when read)."""
        self._withheld = 0
        """Lines since the last one sent (all of them left out)."""

    def take(self, lines: Sequence[str]) -> Share | None:
        """The share of a batch of display lines to send now, or None."""
        if not lines:
            return None
        now = self._clock()
        self._refill(now)
        room = max(0, min(int(self._tokens), self._total - self._sent))
        if self._sent >= self._burst and now - self._reported_at < STEADY_EVERY_S:
            room = 0  # past its first burst a step gets a few events a second, each carrying more
        kept = tuple(lines[len(lines) - room :]) if room else ()
        self._tokens -= len(kept)
        self._sent += len(kept)
        self._unreported += len(lines) - len(kept)
        self._remember(lines)
        self._withheld = 0 if kept else self._withheld + len(lines)
        if kept:
            self._unreported, dropped = 0, self._unreported
            return self._report(kept, dropped, now)
        held_back = min(self._withheld, TAIL_LINES)  # finish() may still send these whole
        if self._unreported > held_back and now - self._reported_at >= COUNT_EVERY_S:
            self._unreported, dropped = held_back, self._unreported - held_back
            return self._report((), dropped, now)
        return None

    def finish(self) -> Share | None:
        """At a command's end: the lines it ended with that were left out, and the count."""
        recent = [line for batch in self._recent for line in batch[-TAIL_LINES:]]
        wanted = min(self._withheld, TAIL_LINES)
        tail = tuple(recent[len(recent) - wanted :]) if wanted else ()
        if not self._unreported:
            return None
        self._unreported, dropped = 0, self._unreported - len(tail)
        self._withheld = 0
        return self._report(tail, dropped, self._clock())

    def _remember(self, lines: Sequence[str]) -> None:
        self._recent.append(lines)
        while sum(len(batch) for batch in list(self._recent)[1:]) >= TAIL_LINES:
            self._recent.popleft()

    def _report(self, lines: tuple[str, ...], dropped: int, now: float) -> Share:
        self._reported_at = now
        return Share(lines, dropped)

    def _refill(self, now: float) -> None:
        self._tokens = min(self._burst, self._tokens + (now - self._refilled_at) * self._per_s)
        self._refilled_at = now
