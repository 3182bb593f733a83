"""What screens may ask of the world, as protocols. Implementations live outside the screens
(wizard/setup/effects.py), so a screen never touches a process, the host door or NVML (ARCHITECTURE L3)."""

from __future__ import annotations

from typing import Protocol

from gpuwizard.bench.protocol import BenchEvent
from gpuwizard.bench.results import BenchSummary
from gpuwizard.core.facts import FreeSpace


class RunDetails(Protocol):
    """What explaining a failed step may ask of the machine (``Effects`` in wizard/setup/effects.py)."""

    def free_space(self) -> tuple[FreeSpace, ...]:
        """The machine's main file systems and their free bytes now (df), for a full disk."""
        ...

    @property
    def logs_hint(self) -> str: ...


class BenchSource(Protocol):
    """A benchmark the screen can start, follow and stop (wizard/bench/session.py)."""

    @property
    def title(self) -> str: ...

    def start(self) -> None: ...
    def poll(self) -> list[BenchEvent | str]: ...
    def running(self) -> bool: ...
    def cancel(self) -> None: ...
    def finish(self) -> BenchSummary: ...
