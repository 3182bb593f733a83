"""The log pane under a flood: 1 GB streams through a followed log file while what the UI holds
stays bounded; every line is shown or counted; a reattach reads only the tail."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

from textual.app import App, ComposeResult

from gpuwizard.runner.logtail import FIRST_WINDOW_BYTES, PARTIAL_KEEP_BYTES, WINDOW_BYTES
from gpuwizard.screens.widgets.log_pane import LogPane

GIB = 1024**3
SEGMENT = 4 * 1024 * 1024
LINE = (
    b"Get:1 http://archive.ubuntu.com/ubuntu jammy/main amd64 flood-package 1.0 [123 kB] xxxx\r\n"
)
BLOCK = LINE * (WINDOW_BYTES // len(LINE))


class PaneApp(App[None]):
    def compose(self) -> ComposeResult:
        yield LogPane(max_lines=2000, lines_per_frame=200)


def grow_sparse(path: Path, size: int) -> int:
    """Grow the log by one segment whose last bytes are real lines; the rest is a hole.

    This streams 1 GB through the follower with ~16 MB on disk: the tail window always lands on
    real lines, and the skipped part is read (and counted) as the kernel's zeros. Returns the
    lines written.
    """
    with path.open("r+b") as log:
        os.pwrite(log.fileno(), BLOCK, size + SEGMENT - len(BLOCK))
    return BLOCK.count(b"\n")


async def test_the_pane_stays_bounded_while_1_gb_streams_through(tmp_path: Path) -> None:
    log = tmp_path / "step.log"
    log.write_bytes(b"")
    app = PaneApp()
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(LogPane)
        pane.flood_frame_s = 0  # every call a frame: the loop below is the clock
        pane.follow(log)
        pane.show_frame()
        tracemalloc.start()
        written, size, peaks = 0, 0, []
        while size < GIB:
            written += grow_sparse(log, size)
            size += SEGMENT
            pane.show_frame()
            peaks.append(len(pane.lines))
            assert len(pane.backlog) <= 200 and pane.tail is not None
            assert len(pane.tail.partial) <= PARTIAL_KEEP_BYTES
            if size % (64 * SEGMENT) == 0:
                await pilot.pause()  # let the widget render what it holds
        _, traced_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert log.stat().st_size == GIB
        assert pane.tail.bytes_read <= (GIB // SEGMENT) * WINDOW_BYTES  # one window per frame
        assert max(peaks) <= 2000  # the Log widget's lines
        assert traced_peak < 32 * 1024 * 1024  # Python memory while 1 GB went by
        assert pane.received == written  # every line is shown or counted as left out
        assert pane.backlog.left_out.lines == written - 200 * (GIB // SEGMENT)  # 200 per frame
        assert "not shown" in str(pane.border_subtitle)
        assert pane.lines[-1] == LINE.decode().rstrip("\r\n")


async def test_a_reattach_reads_only_the_tail_of_a_large_log(tmp_path: Path) -> None:
    log = tmp_path / "step.log"
    with log.open("wb") as out:
        out.truncate(512 * 1024 * 1024)  # half a gigabyte of history (a hole) ...
        out.seek(0, os.SEEK_END)
        out.write(BLOCK * 8)  # ... ending in real lines
    app = PaneApp()
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(LogPane)
        pane.follow(log)
        await pilot.pause(0.1)
        assert pane.tail is not None and pane.tail.bytes_read == FIRST_WINDOW_BYTES
        assert pane.lines[-1] == LINE.decode().rstrip("\r\n")
        assert "of earlier output not shown" in pane.lines[0]
        assert len(pane.lines) <= 201


async def test_switching_to_the_next_step_shows_the_end_of_the_previous_one_first(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    first.write_bytes(b"a1\n")
    second.write_bytes(b"b1\n")
    app = PaneApp()
    async with app.run_test(size=(80, 20)) as pilot:
        pane = app.query_one(LogPane)
        pane.follow(first)
        await pilot.pause(0.1)
        with first.open("ab") as out:
            out.write(b"a2: E: the error that ended step a\n")
        pane.follow(second)  # before the pane's next frame read the file
        pane.add(["── step b"])
        await pilot.pause(0.1)
        assert list(pane.lines) == ["a1", "a2: E: the error that ended step a", "── step b", "b1"]
