"""Known errors (known_errors.yaml): match a signature in output to an explanation and a fix.

Used by the Step screen on a failed step's last lines. Pure: reads only its own data file.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from gpuwizard.codec import from_jsonable


@dataclass(frozen=True)
class Hint:
    id: str
    signature: str
    """A regular expression over the output."""
    explanation: str
    fix: str
    source: str


@dataclass(frozen=True)
class KnownErrors:
    schema: int
    errors: tuple[Hint, ...]


@functools.cache
def known_errors() -> tuple[Hint, ...]:
    data = yaml.safe_load(Path(__file__).with_name("known_errors.yaml").read_text(encoding="utf-8"))
    table: KnownErrors = from_jsonable(KnownErrors, data, "known_errors.yaml")
    for hint in table.errors:
        re.compile(hint.signature)  # a bad pattern fails the tests, not a user's install
    return table.errors


def match(lines: list[str] | tuple[str, ...]) -> Hint | None:
    """The first known error whose signature appears in ``lines``."""
    text = "\n".join(lines)
    return next((hint for hint in known_errors() if re.search(hint.signature, text)), None)
