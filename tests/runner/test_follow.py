"""Following events.jsonl: a long history is replayed in bounded reads, and nothing is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwizard.runner import events as ev
from gpuwizard.runner import follow
from gpuwizard.runner.follow import EventFollower


def test_a_long_history_is_read_in_bounded_steps_and_replayed_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(follow, "READ_BYTES", 4096)
    path = tmp_path / "events.jsonl"
    lines = [ev.LogLines("step", (f"line {i} " + "x" * 500,)) for i in range(100)]
    path.write_text("".join(ev.encode(seq, event) for seq, event in enumerate(lines, 1)))
    follower = EventFollower(path)
    first = follower.poll()
    assert 0 < len(first) < 100
    assert follower.offset <= 4096 + 1024
    rest = list(follower.follow(until=lambda: True, interval_s=0))
    replayed = [item.event for item in [*first, *rest] if isinstance(item, ev.Envelope)]
    assert replayed == lines


def test_a_line_longer_than_one_read_still_comes_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(follow, "READ_BYTES", 1024)
    path = tmp_path / "events.jsonl"
    event = ev.LogLines("step", ("y" * 10_000,))
    path.write_text(ev.encode(1, event))
    (item,) = EventFollower(path).poll()
    assert isinstance(item, ev.Envelope) and item.event == event
