"""Known errors (known_errors.yaml): find a signature in output, and say what it means and what to do.

Used on every step's live log and a failed step's last lines (the Step screen, ``apply``), and by
``gpuwizard doctor`` on step logs, the kernel log and logs a person names. An explanation or fix
may name the signature's groups, so the sentence carries the specifics of this failure (the
make.log path, the versions that disagree). Pure: reads only its own data file.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

from gpuwizard.core.codec import from_jsonable

SCHEMA = 2
Topic = Literal[
    "driver", "secure-boot", "install", "cuda-mismatch", "out-of-memory", "multi-node", "hardware"
]
# {name}, {name|fallback words}, {name:filter}; see known_errors.yaml.
_PLACEHOLDER = re.compile(r"\{(?P<name>\w+)(?::(?P<filter>\w+))?(?:\|(?P<default>[^{}]*))?\}")


def cuda_from_int(value: str) -> str:
    """CUDA's integer form: 12040 is 12.4, 11080 is 11.8."""
    number = int(value)
    return f"{number // 1000}.{number % 1000 // 10}"


_FILTERS = {"cuda": cuda_from_int}


@dataclass(frozen=True)
class Hint:
    id: str
    signature: str
    """A regular expression over the output; its named groups may fill the sentences."""
    explanation: str
    """One sentence; may hold {group}, {group|fallback} and {group:cuda} placeholders."""
    fix: str
    source: str
    topic: Topic | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        return _compiled(self.signature)


@dataclass(frozen=True)
class KnownErrors:
    schema: int
    errors: tuple[Hint, ...]


@dataclass(frozen=True)
class KnownError:
    """A known error found in some text, its sentences filled in from what was captured."""

    hint: Hint
    explanation: str
    fix: str
    line: str
    """The line where the signature starts: the evidence."""

    @property
    def id(self) -> str:
        return self.hint.id


@functools.cache
def _compiled(signature: str) -> re.Pattern[str]:
    return re.compile(signature)


def _check(hint: Hint) -> None:
    """A bad pattern or placeholder fails the tests, not a user's install."""
    groups = hint.pattern.groupindex
    for text in (hint.explanation, hint.fix):
        for placeholder in _PLACEHOLDER.finditer(text):
            if placeholder["name"] not in groups:
                raise ValueError(f"known_errors.yaml {hint.id}: no group {placeholder['name']!r}")
            if placeholder["filter"] and placeholder["filter"] not in _FILTERS:
                raise ValueError(
                    f"known_errors.yaml {hint.id}: no filter {placeholder['filter']!r}"
                )


@functools.cache
def known_errors() -> tuple[Hint, ...]:
    data = yaml.safe_load(Path(__file__).with_name("known_errors.yaml").read_text(encoding="utf-8"))
    table: KnownErrors = from_jsonable(KnownErrors, data, "known_errors.yaml")
    if table.schema != SCHEMA:
        raise ValueError(f"known_errors.yaml: schema {table.schema} is not {SCHEMA}")
    for hint in table.errors:
        _check(hint)
    return table.errors


def fill(template: str, found: re.Match[str]) -> str:
    """The template with the match's groups put in."""

    def value(placeholder: re.Match[str]) -> str:
        captured = found.group(placeholder["name"])
        if captured is None:
            return placeholder["default"] or ""
        if placeholder["filter"]:
            return _FILTERS[placeholder["filter"]](captured)
        return captured.strip()

    return _PLACEHOLDER.sub(value, template)


EVIDENCE_CHARS = 240


def _line_at(text: str, index: int) -> str:
    """The line the match starts on, cut to a readable length."""
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    line = text[start : end if end >= 0 else len(text)].strip()
    return line if len(line) <= EVIDENCE_CHARS else line[: EVIDENCE_CHARS - 1] + "…"


def known_error(hint: Hint, found: re.Match[str], text: str) -> KnownError:
    return KnownError(
        hint, fill(hint.explanation, found), fill(hint.fix, found), _line_at(text, found.start())
    )


MAX_LINE_CHARS = 4096
"""The longest line the signatures look at: a longer one keeps its start and its end.

Real error messages are far shorter; a tool that prints megabytes without a newline (a
progress bar, a binary dumped to the log) must not make a search slow, whatever the pattern."""
_HALF = MAX_LINE_CHARS // 2


def bounded(text: str) -> str:
    """The text as the signatures see it: a carriage return ends a line, as on a terminal, and
    no line is longer than MAX_LINE_CHARS."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(
        line if len(line) <= MAX_LINE_CHARS else f"{line[:_HALF]} … {line[-_HALF:]}"
        for line in lines
    )


def find(text: str, hint_id: str) -> KnownError | None:
    """The named known error, if its signature appears in ``text``."""
    hint = next(h for h in known_errors() if h.id == hint_id)
    seen = bounded(text)
    found = hint.pattern.search(seen)
    return known_error(hint, found, seen) if found else None


def find_all(text: str) -> tuple[KnownError, ...]:
    """Every known error whose signature appears in ``text``, once each, in table order."""
    seen = bounded(text)
    found = ((hint, hint.pattern.search(seen)) for hint in known_errors())
    return tuple(known_error(hint, match, seen) for hint, match in found if match)


def match(lines: Sequence[str]) -> KnownError | None:
    """The first known error whose signature appears in ``lines``."""
    text = bounded("\n".join(lines))
    for hint in known_errors():
        if found := hint.pattern.search(text):
            return known_error(hint, found, text)
    return None
