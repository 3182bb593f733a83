"""A step's share of the event stream: a burst, a reader's rate, a total, and the final lines."""

from __future__ import annotations

from gpuwizard.runner.eventquota import (
    BURST_LINES,
    LINES_PER_S,
    STEP_LINES,
    TAIL_LINES,
    LineQuota,
    Share,
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def lines(start: int, count: int) -> list[str]:
    return [f"line {i}" for i in range(start, start + count)]


def test_ordinary_output_is_all_sent() -> None:
    quota = LineQuota(Clock())
    assert quota.take(lines(0, 30)) == Share(tuple(lines(0, 30)), 0)
    assert quota.finish() is None


def test_a_burst_beyond_the_budget_keeps_its_newest_lines_and_counts_the_rest() -> None:
    quota = LineQuota(Clock())
    share = quota.take(lines(0, BURST_LINES + 100))
    assert share == Share(tuple(lines(100, BURST_LINES)), 100)


def test_a_flood_is_counted_once_a_second_and_its_last_lines_come_at_the_end() -> None:
    clock = Clock()
    quota = LineQuota(clock)
    sent, dropped, total = 0, 0, 0
    for _ in range(20 * 60):  # a minute of 1,000-line batches every 50 ms
        batch = lines(total, 1000)
        total += 1000
        if (share := quota.take(batch)) is not None:
            sent += len(share.lines)
            dropped += share.dropped
        clock.now += 0.05
    end = quota.finish()
    assert end is not None
    assert end.lines == tuple(lines(total - TAIL_LINES, TAIL_LINES))
    sent += len(end.lines)
    dropped += end.dropped
    assert sent + dropped == total
    assert sent <= BURST_LINES + 60 * LINES_PER_S + TAIL_LINES


def test_a_step_never_sends_more_than_its_total() -> None:
    clock = Clock()
    quota = LineQuota(clock)
    sent = 0
    for hour_tick in range(2000):
        share = quota.take(lines(hour_tick * 50, 50))
        sent += len(share.lines) if share else 0
        clock.now += 1.0
    assert sent == STEP_LINES


def test_past_the_budget_only_counts_are_sent_at_most_once_a_second() -> None:
    clock = Clock()
    quota = LineQuota(clock, total=10)
    assert quota.take(lines(0, 10)) == Share(tuple(lines(0, 10)), 0)
    shares = []
    for tick in range(1, 51):  # 2.5 s of 100-line batches every 50 ms
        clock.now = tick / 20
        if (share := quota.take(lines(0, 100))) is not None:
            shares.append((clock.now, share))
    assert [(t, share.lines) for t, share in shares] == [(1.0, ()), (2.0, ())]
    assert shares[0][1].dropped == 20 * 100 - TAIL_LINES
    assert shares[1][1].dropped == 20 * 100


def test_finish_sends_the_last_lines_when_they_were_left_out_and_counts_the_rest_once() -> None:
    clock = Clock()
    quota = LineQuota(clock, total=10)
    quota.take(lines(0, 10))
    clock.now += 1.0
    counted = quota.take(lines(10, 100))
    assert counted == Share((), 100 - TAIL_LINES)  # the newest 20 may still come whole
    end = quota.finish()
    assert end == Share(tuple(lines(90, TAIL_LINES)), 0)
    assert quota.finish() is None


def test_past_the_burst_a_flood_makes_a_few_events_a_second() -> None:
    clock = Clock()
    quota = LineQuota(clock)
    events = 0
    for tick in range(1, 60 * 60 + 1):  # a minute of 17-line batches every 16 ms
        clock.now = tick / 60
        events += quota.take(lines(0, 17)) is not None
    assert events <= 60 * 4 + BURST_LINES // 17 + 1  # four a second after the burst
