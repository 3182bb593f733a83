"""What ``gpuwizard bench`` prints while the benchmark runs: one line per result, skip and
problem on the report's stream, and, while a mode runs, where it is (mode, batch, samples so far,
the latest img/s, time since the start) on stderr, so that ``--json`` leaves stdout to the JSON.

On a terminal the live line is redrawn in place at each warm-up step and sample, and erased
before any other line; elsewhere (a pipe, a log, CI) each sample is one plain line, at most
``--steps`` / ``--sample-every`` of them per mode, so a log tells the same story in order. Only
formats events: it never reads the worker or the machine.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from typing import TextIO

from gpuwizard.bench import protocol as bp
from gpuwizard.bench.protocol import BenchEvent
from gpuwizard.core.machine_words import counted

ERASE_LINE = "\r\x1b[K"
"""Back to the start of the line and clear it (ECMA-48 EL 0)."""


def raw_stream(stream: TextIO) -> TextIO:
    """The terminal under gpuwizard's sanitising wrapper (core.safetext.CleanStream), which would
    drop the carriage return and the erase sequence: only they are written there, never text."""
    inner = getattr(stream, "stream", None)
    return inner if inner is not None else stream


def elapsed_words(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60:02d} s"


class Progress:
    """The benchmark as it goes. ``redraw`` defaults to whether ``live`` is a terminal."""

    def __init__(
        self,
        out: TextIO,
        live: TextIO,
        *,
        redraw: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.out = out
        self.live = live
        self.redraw = live.isatty() if redraw is None else redraw
        self.clock = clock
        self.started_at = clock()
        self.device = "cuda"
        self.samples = 0
        """Samples of the mode now running (reset by its warm-up or a batch-size back-off)."""
        self.drawn = False
        """A live line is on the terminal, to be erased before the next line."""

    def show(self, items: list[BenchEvent | str]) -> None:
        for item in items:
            if (status := self.status(item)) is not None:
                self.show_status(status)
            if line := self.line(item):
                self.erase()
                print(line, file=self.out, flush=True)

    def close(self) -> None:
        """Erase the live line: call before printing anything else."""
        self.erase()

    # ---------------------------------------------------------------------------- live line
    def status(self, item: BenchEvent | str) -> str | None:
        """The live line for an event: None for events that change it not."""
        match item:
            case bp.Warmup():
                self.samples = 0
                if not self.redraw:  # a log gets the samples, not every warm-up step
                    return None
                return (
                    f"  {self.running(item.mode, 1)}, batch {item.batch_size}: warming up, "
                    f"step {item.step} of {item.steps}, {self.elapsed()} elapsed"
                )
            case bp.OutOfMemory():
                self.samples = 0
                return None
            case bp.Sample():
                self.samples += 1
                return (
                    f"  {self.running(item.mode, item.world_size)}, batch {item.batch_size}: "
                    f"{counted(self.samples, 'sample')}, {item.images_per_s:,.0f} img/s now, "
                    f"{self.elapsed()} elapsed"
                )
        return None

    def show_status(self, status: str) -> None:
        if not self.redraw:
            print(status, file=self.live, flush=True)
            return
        # the live stream's own width (stdout may be a file: bench --json > r.json); a wrapped
        # line cannot be redrawn
        width = terminal_columns(self.live) - 1
        raw_stream(self.live).write(ERASE_LINE)
        self.live.write(status[:width])
        self.live.flush()
        self.drawn = True

    def erase(self) -> None:
        if self.drawn:
            raw_stream(self.live).write(ERASE_LINE)
            self.live.flush()
            self.drawn = False

    def elapsed(self) -> str:
        return elapsed_words(self.clock() - self.started_at)

    def running(self, mode: bp.Mode, world_size: int) -> str:
        if world_size == 1:
            return mode
        unit = "CPU processes" if self.device == "cpu" else "GPUs"
        return f"{mode} on {world_size} {unit}"

    # ---------------------------------------------------------------------------- lines
    def line(self, item: BenchEvent | str) -> str | None:
        """The lasting line for an event, or None."""
        match item:
            case str():
                return item
            case bp.Started():
                self.device = item.device
                where = "the CPU" if item.device == "cpu" else f"CUDA {item.cuda}"
                return f"  torch {item.torch} on {where}, {counted(item.world_size, 'process', 'processes')}"
            case bp.Result():
                return self.result_line(item)
            case bp.Skipped():
                return f"  {item.mode}: skipped ({item.reason})"
            case bp.OutOfMemory():
                then = f"trying {item.next}" if item.next else "no smaller batch to try"
                return f"  {item.mode}: batch {item.batch_size} does not fit; {then}"
            case bp.Error():
                return f"  {item.mode or 'benchmark'}: failed: {item.message}"
        return None

    def result_line(self, item: bp.Result) -> str:
        on_cpu = self.device == "cpu"
        if on_cpu:
            where = "the CPU" if item.world_size == 1 else f"{item.world_size} CPU processes"
        else:
            where = counted(item.world_size, "GPU")
        return (
            f"  {item.mode} on {where}: {item.images_per_s:,.0f} img/s "
            f"({item.per_gpu:,.0f} per {'process' if on_cpu else 'GPU'}, batch {item.batch_size}, "
            f"{counted(item.samples, 'sample')})"
        )


def terminal_columns(stream: TextIO) -> int:
    """The width of the terminal ``stream`` writes to; 80 where it cannot be read."""
    try:
        return os.get_terminal_size(raw_stream(stream).fileno()).columns
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size().columns
