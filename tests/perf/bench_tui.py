"""Benchmark: the TUI's first frame against a bare Textual app's, and the log pane's ingest against
Textual's stock Log fed line by line, each anchor measured in the same run on the same machine.

Run: python tests/perf/bench_tui.py [--runs N]

(a) First frame: from process start in a real 80x24 pty to the header drawn, for
`gpuwizard --simulate h100x8-ubuntu2204-fresh` and for a bare app (Header, Static, Footer), in
alternating runs (goal: ours <= 1.4x the bare app). (b) Ingest: our LogPane follows a log file
that another process floods with 100-byte lines while a key is pressed every 50 ms: lines
accounted for (shown, or left out and counted) per second, and the slowest key answer; against
a stock ``Log`` given the same lines by ``write_line``, one at a time (goal: >= 100x). Prints
figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

TALKER = Path(__file__).parents[1] / "fakes" / "talker.py"
PROFILE = "h100x8-ubuntu2204-fresh"
GOAL_FIRST_FRAME_RATIO = 1.4
GOAL_INGEST_RATIO = 100
BARE_APP = """
from textual.app import App
from textual.widgets import Footer, Header, Static


class Bare(App[None]):
    TITLE = "bareapp"

    def compose(self):
        yield Header()
        yield Static("hello")
        yield Footer()


Bare().run()
"""


@dataclass(frozen=True)
class FirstFrame:
    ours_ms: list[float]
    bare_ms: list[float]

    @property
    def ratio(self) -> float:
        return statistics.median(self.ours_ms) / statistics.median(self.bare_ms)


def first_frame(runs: int = 7) -> FirstFrame:
    """Alternating runs of ours and the bare app, each to its header in a real pty."""
    import pexpect

    with tempfile.TemporaryDirectory() as home:
        bare = Path(home, "bare_app.py")
        bare.write_text(BARE_APP)
        env = {**os.environ, "XDG_STATE_HOME": home, "TERM": "xterm-256color"}
        ours_argv = [sys.executable, "-m", "gpuwizard", "--simulate", PROFILE]
        bare_argv = [sys.executable, str(bare)]

        def once(argv: list[str], marker: str) -> float:
            start = time.perf_counter()
            child = pexpect.spawn(argv[0], argv[1:], env=env, dimensions=(24, 80))
            child.expect(marker, timeout=60)
            elapsed = (time.perf_counter() - start) * 1000
            child.close(force=True)
            return elapsed

        once(ours_argv, "gpuwizard")  # warm bytecode and page cache, and create the sandbox
        once(bare_argv, "bareapp")
        ours, plain = [], []
        for _ in range(runs):
            ours.append(once(ours_argv, "gpuwizard"))
            plain.append(once(bare_argv, "bareapp"))
    return FirstFrame(ours, plain)


@dataclass(frozen=True)
class Ingest:
    lines: int
    seconds: float
    slowest_key_ms: float
    held_lines: int
    """What the pane's Log widget holds at the end (bounded by max_lines)."""

    @property
    def lines_per_s(self) -> float:
        return self.lines / self.seconds


async def ingest_ours(megabytes: int = 100) -> Ingest:
    """Our pane follows a file another process floods; a thread presses a key every 50 ms."""
    from textual import events
    from textual.app import App, ComposeResult
    from textual.binding import Binding

    from gpuwizard.screens.widgets.log_pane import LogPane

    class Pane(App[None]):
        BINDINGS: ClassVar = [Binding("k", "ping", "")]

        def __init__(self) -> None:
            super().__init__()
            self.answered: list[float] = []

        def compose(self) -> ComposeResult:
            yield LogPane()

        def action_ping(self) -> None:
            self.call_after_refresh(lambda: self.answered.append(time.perf_counter()))

    total = int(megabytes * 1_000_000) // 100
    app = Pane()
    gc.freeze()  # as GpuWizardApp does once its stages are loaded
    sent: list[float] = []
    stop = threading.Event()

    def press() -> None:
        while not stop.wait(0.05):
            key = events.Key("k", "k")
            key.set_sender(app)
            sent.append(time.perf_counter())
            app._driver.send_message(key)  # type: ignore[union-attr]  # as a terminal's input thread does

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp, "step.log")
        log.write_bytes(b"")
        async with app.run_test(size=(120, 40)) as pilot:
            pane = app.query_one(LogPane)
            pane.follow(log)
            await pilot.pause()
            presser = threading.Thread(target=press, daemon=True)
            presser.start()
            start = time.perf_counter()
            with log.open("ab") as out:
                writer = subprocess.Popen(
                    [sys.executable, str(TALKER), "flood", str(megabytes)], stdout=out
                )
                while writer.poll() is None or pane.tail.offset != log.stat().st_size:  # type: ignore[union-attr]
                    await asyncio.sleep(0.01)
                    assert time.perf_counter() - start < 300, "the pane never caught up"
                elapsed = time.perf_counter() - start
            stop.set()
            presser.join()
            while len(app.answered) < len(sent):
                await asyncio.sleep(0.01)
            keys = [(a - s) * 1000 for s, a in zip(sent, app.answered, strict=True)]
            return Ingest(total, elapsed, max(keys, default=0.0), len(pane.lines))


async def ingest_stock(count: int = 10_000) -> Ingest:
    """Textual's Log, one write_line per line (yielding every 100 lines, as a reader loop would)."""
    from textual.app import App, ComposeResult
    from textual.widgets import Log

    class Stock(App[None]):
        def compose(self) -> ComposeResult:
            yield Log()

    lines = [f"{i:09d} {'x' * 89}" for i in range(count)]
    app = Stock()
    gc.freeze()  # the same start as ours
    async with app.run_test(size=(120, 40)) as pilot:
        log = app.query_one(Log)
        await pilot.pause()
        start = time.perf_counter()
        for index, line in enumerate(lines):
            log.write_line(line)
            if index % 100 == 99:
                await asyncio.sleep(0)
        await pilot.pause()
        elapsed = time.perf_counter() - start
        return Ingest(count, elapsed, 0.0, len(log.lines))


def ingest(megabytes: int = 100) -> tuple[Ingest, Ingest]:
    return asyncio.run(ingest_ours(megabytes)), asyncio.run(ingest_stock())


def describe(ours: Ingest, stock: Ingest) -> list[str]:
    return [
        f"log pane: {ours.lines_per_s:,.0f} lines/s from a flooded log file ({ours.lines:,} lines in "
        f"{ours.seconds:.1f} s; slowest key {ours.slowest_key_ms:.0f} ms; it holds {ours.held_lines:,})",
        f"stock Log, write_line per line: {stock.lines_per_s:,.0f} lines/s "
        f"-> {ours.lines_per_s / stock.lines_per_s:,.0f}x (goal >= {GOAL_INGEST_RATIO}x)",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--mb", type=int, default=100, help="size of the flood the pane follows")
    args = parser.parse_args()
    frames = first_frame(args.runs)
    print(
        f"first frame: ours median {statistics.median(frames.ours_ms):.0f} ms, bare Textual app "
        f"{statistics.median(frames.bare_ms):.0f} ms: {frames.ratio:.2f}x (goal <= {GOAL_FIRST_FRAME_RATIO}x)"
    )
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("  note: PYTHONDONTWRITEBYTECODE is set, so every start recompiles the imports")
    for line in describe(*ingest(args.mb)):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
