"""The known-error signatures run in linear time on any input a broken machine can print.

Python's `re` backtracks, so two shapes of pattern go quadratic or worse on a long line: an
unbounded repeat at the start of a search (every start position scans the rest of the line)
and a repeat inside a repeat. The first test rejects both shapes by walking each pattern's
parse tree; the matcher also cuts every line to MAX_LINE_CHARS (its start and its end), and the
property test feeds adversarial 64 KB lines built from the patterns' own words. How fast each
pattern is on such lines is a figure, printed by tests/perf/bench_known_errors.py.
"""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwizard.core.hints import MAX_LINE_CHARS, bounded, find_all, known_errors, match

if sys.version_info >= (3, 11):
    from re import _constants as sre  # type: ignore[attr-defined]
    from re import _parser as parser  # type: ignore[attr-defined]
else:  # pragma: no cover - Python 3.10
    import sre_constants as sre
    import sre_parse as parser

REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT)}
UNBOUNDED = sre.MAXREPEAT


CATEGORIES = {
    sre.CATEGORY_DIGIT: str.isdigit,
    sre.CATEGORY_NOT_DIGIT: lambda c: not c.isdigit(),
    sre.CATEGORY_WORD: lambda c: c.isalnum() or c == "_",
    sre.CATEGORY_NOT_WORD: lambda c: not (c.isalnum() or c == "_"),
    sre.CATEGORY_SPACE: str.isspace,
    sre.CATEGORY_NOT_SPACE: lambda c: not c.isspace(),
}


def can_match(item, char: str) -> bool:  # type: ignore[no-untyped-def]
    """Whether one parsed item could match ``char`` (True when unsure)."""
    op, value = item
    if op == sre.LITERAL:
        return chr(value) == char
    if op == sre.NOT_LITERAL:
        return chr(value) != char
    if op == sre.IN:
        negate = value[0][0] == sre.NEGATE
        hit = any(can_match(member, char) for member in value[negate:])
        return hit != negate
    if op == sre.RANGE:
        return value[0] <= ord(char) <= value[1]
    if op == sre.CATEGORY:
        return CATEGORIES.get(value, lambda _: True)(char)
    return True


def delimited(body) -> bool:  # type: ignore[no-untyped-def]
    r"""A repeated body that starts with a literal its own inner repeats cannot match, like
    (?:\.\d+)*: each round is marked off, so the repeat inside cannot be split two ways."""
    if not body or body[0][0] != sre.LITERAL:
        return False
    separator = chr(body[0][1])
    inner = [item for op, v in body[1:] if op in REPEATS for item in v[2]]
    return not any(can_match(item, separator) for item in inner)


def unbounded_repeats(items, depth: int = 0):  # type: ignore[no-untyped-def]
    """(depth of ambiguous nesting, node) for every unbounded repeat in a parsed pattern."""
    for op, value in items:
        if op in REPEATS:
            _, high, body = value
            if high == UNBOUNDED:
                yield depth, op
            nests = high == UNBOUNDED and not delimited(body)
            yield from unbounded_repeats(body, depth + nests)
        elif op == sre.SUBPATTERN:
            yield from unbounded_repeats(value[-1], depth)
        elif op == sre.BRANCH:
            for branch in value[1]:
                yield from unbounded_repeats(branch, depth)


def leading_repeat(items) -> bool:  # type: ignore[no-untyped-def]
    """Whether a search could start with an unbounded repeat (no anchor or literal first)."""
    for op, value in items:
        if op == sre.AT:
            return False  # ^ or \b: only some positions are tried
        if op in REPEATS:
            low, high, body = value
            return high == UNBOUNDED or (low == 0 and leading_repeat(body))
        if op == sre.SUBPATTERN:
            return leading_repeat(value[-1])
        if op == sre.BRANCH:
            return any(leading_repeat(branch) for branch in value[1])
        return False
    return False


HINTS = known_errors()


@pytest.mark.parametrize("hint", HINTS, ids=[h.id for h in HINTS])
def test_no_signature_has_a_shape_that_backtracks_on_long_lines(hint) -> None:  # type: ignore[no-untyped-def]
    tree = parser.parse(hint.signature)
    nested = [op for depth, op in unbounded_repeats(tree) if depth > 0]
    assert not nested, f"{hint.id}: a repeat inside a repeat"
    assert not leading_repeat(tree), f"{hint.id}: starts with an unbounded repeat; anchor it (?m)^"


def test_the_shape_check_catches_the_pattern_that_once_took_25_s_per_64_kb_line() -> None:
    slow = r"(?P<gpu>[^\n]*?) with CUDA capability (?P<sm>sm_\d+) is not compatible"
    assert leading_repeat(parser.parse(slow))
    assert not leading_repeat(parser.parse("(?m)^" + slow))
    assert any(depth for depth, _ in unbounded_repeats(parser.parse(r"(a+)+b")))
    assert any(depth for depth, _ in unbounded_repeats(parser.parse(r"(?:a\w+)*")))
    assert not any(depth for depth, _ in unbounded_repeats(parser.parse(r"\d+(?:\.\d+)*")))


def test_a_line_longer_than_the_cap_keeps_its_start_and_end() -> None:
    start, end = "dpkg was interrupted", "CUDA error: out of memory"
    line = start + "x" * 100_000 + end
    seen = bounded(line)
    assert len(seen) < MAX_LINE_CHARS + 10
    assert seen.startswith(start) and seen.endswith(end)
    assert {e.id for e in find_all(line)} == {"dpkg-interrupted", "cuda-oom"}


def test_a_carriage_return_ends_a_line_as_on_a_terminal() -> None:
    progress = "Progress: [ 10%]\rProgress: [ 90%]\rE: Unable to locate package nvidia-open"
    found = match([progress])
    assert found is not None and found.id == "package-missing"
    assert found.line == "E: Unable to locate package nvidia-open"


def words(pattern: str) -> list[str]:
    """Fragments of a pattern's literal text: what an adversary would repeat."""
    return [w for w in re.split(r"[^A-Za-z0-9_:./ ]+", pattern) if len(w) > 1] or ["x"]


FRAGMENTS = sorted({w for hint in HINTS for w in words(hint.signature)})


@st.composite
def hostile_lines(draw: st.DrawFn) -> str:
    """A 64 KB line: the patterns' words, digits, spaces and odd bytes, repeated and mixed."""
    pieces = draw(
        st.lists(
            st.one_of(
                st.sampled_from(FRAGMENTS), st.sampled_from(["\0", " ", "(", ")", "sm_9", "/"])
            ),
            min_size=1,
            max_size=12,
        )
    )
    unit = "".join(pieces)
    return (unit * (65536 // len(unit) + 1))[:65536]


@settings(max_examples=60, deadline=None)
@given(line=hostile_lines())
def test_adversarial_64kb_lines_match_as_their_bounded_form_does(line: str) -> None:
    """No hang (the test's timeout is the bound) and no difference made by the cap itself."""
    found = {e.id for e in find_all(line)}
    assert found == {e.id for e in find_all(bounded(line))}
    first = match([line])
    assert (first is None) == (not found)
