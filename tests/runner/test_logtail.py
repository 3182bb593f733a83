"""Following a step's log file: only its tail is read, skipped lines are counted, and what waits
for the next frame stays bounded."""

from __future__ import annotations

from pathlib import Path

from gpuwizard.runner.logtail import (
    PARTIAL_KEEP_BYTES,
    SHOWN_LINE_CHARS,
    Backlog,
    Gap,
    LogTail,
    TailUpdate,
    gap_line,
)


def numbered(start: int, count: int) -> bytes:
    return b"".join(f"line {i:07d} {'x' * 80}\r\n".encode() for i in range(start, start + count))


def shown(start: int, count: int) -> tuple[str, ...]:
    return tuple(f"line {i:07d} {'x' * 80}" for i in range(start, start + count))


LINE = len(numbered(0, 1))


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as log:
        log.write(data)


def test_a_first_look_reads_only_the_tail_of_a_large_log(tmp_path: Path) -> None:
    log = tmp_path / "step.log"
    log.write_bytes(numbered(0, 100_000))  # 9.5 MB
    tail = LogTail(log, first_window_bytes=64 * 1024)
    update = tail.poll()
    assert tail.bytes_read == 64 * 1024
    assert update.lines[-1] == shown(99_999, 1)[0]
    assert update.lines == shown(100_000 - len(update.lines), len(update.lines))  # whole lines
    assert update.skipped_bytes == log.stat().st_size - 64 * 1024
    assert update.skipped_lines == 0  # never counted: that would read the whole file


def test_new_lines_arrive_whole_even_when_written_in_pieces(tmp_path: Path) -> None:
    log = tmp_path / "step.log"
    log.write_bytes(b"")
    tail = LogTail(log)
    assert tail.poll() == TailUpdate()
    data = numbered(0, 3) + "naïve ü\r\n".encode()
    pieces = [data[:10], data[10:95], data[95:-4], data[-4:-2], data[-2:]]
    got: list[str] = []
    for piece in pieces:
        append(log, piece)
        got.extend(tail.poll().lines)
    assert got == [*shown(0, 3), "naïve ü"]


def test_more_than_a_window_between_polls_is_skipped_and_every_skipped_line_counted(
    tmp_path: Path,
) -> None:
    log = tmp_path / "step.log"
    log.write_bytes(numbered(0, 10))
    tail = LogTail(log, window_bytes=16 * 1024)
    first = tail.poll()
    append(log, numbered(10, 50_000))
    update = tail.poll()
    assert update.lines == shown(50_010 - len(update.lines), len(update.lines))
    assert len(first.lines) + update.skipped_lines + len(update.lines) == 50_010
    assert update.skipped_bytes == 0
    assert tail.bytes_read == len(numbered(0, 10)) + 16 * 1024  # one window, never the skipped


def test_terminal_redraws_and_escapes_are_cleaned_for_display(tmp_path: Path) -> None:
    log = tmp_path / "step.log"
    log.write_bytes(b"Get 10%\rGet 100%\r\n\x1b[31mred\x1b[0m done\r\n\xff\xfe bad\n")
    assert LogTail(log).poll().lines == ("Get 100%", "red done", "\ufffd\ufffd bad")


def test_a_replaced_or_truncated_log_is_followed_again_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "step.log"
    log.write_bytes(numbered(0, 5))
    tail = LogTail(log)
    tail.poll()
    log.write_bytes(numbered(100, 2))  # shorter: truncated
    again = tail.poll()
    assert again.restarted and again.lines == shown(100, 2)
    replacement = tmp_path / "new.log"
    replacement.write_bytes(numbered(200, 9))
    replacement.replace(log)
    assert tail.poll().lines == shown(200, 9)


def test_a_log_that_does_not_exist_yet_is_read_once_it_does(tmp_path: Path) -> None:
    log = tmp_path / "step.log"
    tail = LogTail(log)
    assert tail.poll() == TailUpdate()
    log.write_bytes(numbered(0, 2))
    assert tail.poll().lines == shown(0, 2)


def test_a_line_without_end_is_kept_only_in_part_and_shown_cut(tmp_path: Path) -> None:
    log = tmp_path / "step.log"
    log.write_bytes(b"")
    tail = LogTail(log)
    for _ in range(50):
        append(log, b"y" * 100_000)  # 5 MB without a newline
        assert tail.poll().lines == ()
        assert len(tail.partial) <= PARTIAL_KEEP_BYTES
    append(log, b"\nnext\n")
    (long, after) = tail.poll().lines
    assert long.startswith("y" * SHOWN_LINE_CHARS) and "more" in long and len(long) < 2100
    assert after == "next"


def test_the_backlog_keeps_one_frame_and_marks_where_lines_were_left_out() -> None:
    backlog = Backlog(per_frame=3)
    backlog.add(["a", "b"])
    backlog.add(["c"], Gap(lines=10))
    assert backlog.take() == [gap_line(Gap(1)), "b", gap_line(Gap(10)), "c"]
    backlog.add([f"l{i}" for i in range(100)])
    assert backlog.take() == [gap_line(Gap(97)), "l97", "l98", "l99"]
    assert backlog.left_out == Gap(1 + 10 + 97)
    assert backlog.take() == []


def test_a_gap_keeps_its_place_between_the_lines_around_it() -> None:
    backlog = Backlog(per_frame=10)
    backlog.add(["before"])
    backlog.add(["after"], Gap(lines=5, bytes=0))
    backlog.add([], Gap(lines=0, bytes=2_000_000))
    assert backlog.take() == ["before", gap_line(Gap(5)), "after", gap_line(Gap(0, 2_000_000))]
    assert "2.0 MB of earlier output" in gap_line(Gap(0, 2_000_000))
