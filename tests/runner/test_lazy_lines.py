"""Display lines cleaned on reading: the same lines as cleaning the whole chunk, and a batch of
blocks that slices like one list."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpuwizard.runner.pty import Joined
from gpuwizard.runner.ptytext import Display, Scrubber, clean

RAW = (
    b"Get 10%\rGet 100%\r\n\x1b[31mred\x1b[0m\x00nul\r\n\xff bad\r\nplain\r\n\x1b]0;title\x07x\r\n"
)


def test_lines_cleaned_on_reading_equal_the_chunk_cleaned_at_once() -> None:
    lines = Display(Scrubber()).feed(RAW)
    whole = clean(RAW.decode("utf-8", "replace")).split("\n")[:-1]
    assert list(lines) == whole == ["Get 100%", "rednul", "\ufffd bad", "plain", "x"]
    assert lines[1] == "rednul" and lines[-2:] == ["plain", "x"]


def test_a_secret_added_later_is_masked_in_lines_read_later() -> None:
    scrubber = Scrubber()
    lines = Display(scrubber).feed(b"token hunter2 here\r\n")
    scrubber.add("hunter2")
    assert list(lines) == ["token ******** here"]


@given(
    st.lists(st.lists(st.text(max_size=3), max_size=5), max_size=5),
    st.integers(-30, 30),
    st.integers(-30, 30) | st.none(),
    st.sampled_from([1, 2, -1]),
)
def test_a_joined_batch_slices_and_indexes_like_one_list(
    blocks: list[list[str]], start: int, stop: int | None, step: int
) -> None:
    flat = [line for block in blocks for line in block]
    joined = Joined(list(blocks))
    assert len(joined) == len(flat) and list(joined) == flat
    assert joined[start:stop:step] == flat[start:stop:step]
    if -len(flat) <= start < len(flat):
        assert joined[start] == flat[start]
