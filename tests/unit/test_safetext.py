"""The one sanitiser (gpuwizard.core.safetext): what it removes, what it keeps, and a property over
arbitrary bytes: nothing it returns is a C0/C1 control or a format (bidi) character but newline
and tab."""

from __future__ import annotations

import io
import json
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwizard.core.safetext import CleanStream, clean, json_text, one_line
from gpuwizard.runner.ptytext import Display, Scrubber

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def unsafe_in(text: str) -> list[str]:
    """Judged by unicodedata alone, independently of the sanitiser's own table."""
    return [
        f"U+{ord(c):04X}"
        for c in text
        if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")
    ]


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        pytest.param("a\x1b]52;c;cm0gLXJmIH4=\x07b", "ab", id="OSC 52 clipboard write, BEL-ended"),
        pytest.param("a\x1b]52;c;cm0=\x1b\\b", "ab", id="OSC 52, ST-ended"),
        pytest.param(
            "\x1b]8;;https://evil.example\x1b\\here\x1b]8;;\x1b\\", "here", id="OSC 8 link"
        ),
        pytest.param("\x1b]0;title\x07x", "x", id="window title"),
        pytest.param("\x1b[2Jx\x1b[31mred\x1b[0m", "xred", id="CSI 2J and colours"),
        pytest.param("bell\x07", "bell", id="BEL"),
        pytest.param("abc\u202egnp.exe", "abcgnp.exe", id="U+202E right-to-left override"),
        pytest.param(f"x{BIDI}y", "xy", id="every bidi control"),
        pytest.param("zero\u200bwidth\ufeff", "zerowidth", id="zero-width characters"),
        pytest.param("c1\x9b2J\x85", "c12J", id="8-bit C1 controls"),
        pytest.param("line\u2028sep\u2029", "linesep", id="line and paragraph separators"),
        pytest.param("lone\ud800surrogate", "lonesurrogate", id="a lone surrogate"),
        pytest.param("50%\r75%\rdone\n", "done\n", id="carriage-return redraws"),
        pytest.param("tab\tand\nnewline", "tab\tand\nnewline", id="tab and newline kept"),
        pytest.param("Ünïcödé 密码 ✓ –", "Ünïcödé 密码 ✓ –", id="printable text kept"),
        pytest.param(
            "\x1b]52;c;unterminated\nnext line",
            "\nnext line",
            id="unterminated OSC ends at the line",
        ),
        pytest.param("\U000e0041tag", "tag", id="a tag character"),
    ],
)
def test_clean(raw: str, shown: str) -> None:
    assert clean(raw) == shown


def test_one_line_folds_breaks_and_tabs() -> None:
    assert one_line("a\n\tb\x1b[2J \u202ec") == "a b c"


@pytest.mark.parametrize(
    "value", ["\x1b]52;c;x\x07", "a\u202eb", "\x7f\x85\x9b", "\ud800", "\U000e0001"]
)
def test_json_text_keeps_the_data_and_escapes_what_is_unsafe(value: str) -> None:
    text = json_text({"v": value, "k": [value]})
    assert json.loads(text) == {"v": value, "k": [value]}
    assert unsafe_in(text.replace("\n", "")) == []


def test_clean_stream_cleans_each_write() -> None:
    out = io.StringIO()
    stream = CleanStream(out)
    stream.write("a\x1b]52;c;")  # an escape split across writes loses its ESC in the first
    stream.write("x\x07b\u202e\n")
    assert out.getvalue() == "axb\n"
    assert unsafe_in(out.getvalue()) == []


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=400))
def test_no_control_or_bidi_character_survives_arbitrary_bytes(data: bytes) -> None:
    text = data.decode("utf-8", "surrogateescape")
    assert unsafe_in(clean(text)) == []
    assert unsafe_in(one_line(text)) == []
    assert unsafe_in(json_text(text).replace("\n", "")) == []
    assert json.loads(json_text(text)) == text


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_no_control_or_bidi_character_survives_arbitrary_text(text: str) -> None:
    assert unsafe_in(clean(text)) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=80), max_size=8))
def test_the_live_log_shows_no_control_character_whatever_the_bytes(chunks: list[bytes]) -> None:
    display = Display(Scrubber())
    lines = [line for chunk in chunks for line in display.feed(chunk)] + display.finish()
    assert all(unsafe_in(line) == [] for line in lines)
