"""How plan values become deploy.sh words: validated, quoted, and laid out in lines.

Every value goes through ``shlex.quote`` (in a test build, paths the script writes are joined to
``ROOT``); what
bash cannot carry is refused with a one-line ExportError naming the step: NUL anywhere, a newline
or a ``..`` part in a path, an invalid environment variable name. Pure text functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpuwizard.export.source import ExportError
from gpuwizard.export.words import ENV_NAME, one_line, plain_word

ROOT = '"${GPUWIZARD_ROOT:-}"'
"""Joined to every path the script itself writes or checks, in a test build only."""
WIDTH = 100
INDENT = "  "


def quote(value: str) -> str:
    return plain_word(value)


def argv_words(step_id: str, argv: Sequence[str]) -> list[str]:
    if not argv:
        raise ExportError(f"step {step_id}: a command without a program")
    for arg in argv:
        if "\0" in arg:
            raise ExportError(f"step {step_id}: an argument of {argv[0]!r} contains a NUL byte")
    return [quote(arg) for arg in argv]


def env_words(step_id: str, env: Mapping[str, str]) -> list[str]:
    """NAME=VALUE words, for ``gw_run`` to export to its one command."""
    words = []
    for name, value in env.items():
        if not ENV_NAME.fullmatch(name):
            raise ExportError(f"step {step_id}: {name!r} is not a valid environment variable name")
        if "\0" in value:
            raise ExportError(f"step {step_id}: the value of {name} contains a NUL byte")
        words.append(quote(f"{name}={value}"))
    return words


def rooted(step_id: str, what: str, path: str, root: str = "") -> str:
    """An absolute target path, quoted, after ``root`` (``ROOT`` in a test build)."""
    for bad, name in (("\0", "a NUL byte"), ("\n", "a newline")):
        if bad in path:
            raise ExportError(
                f"step {step_id}: the {what} {path!r} contains {name}; refusing to export it"
            )
    if not path.startswith("/"):
        raise ExportError(f"step {step_id}: the {what} {path!r} is not absolute")
    if ".." in path.split("/"):
        raise ExportError(
            f"step {step_id}: the {what} {path!r} has a '..' part; refusing to export it"
        )
    return root + quote(path)


def comment_lines(text: str) -> list[str]:
    """Text as ``#`` comment lines of at most WIDTH columns."""
    lines: list[str] = []
    for word in one_line(text).split():
        if lines and len(lines[-1]) + 1 + len(word) <= WIDTH:
            lines[-1] += f" {word}"
        else:
            lines.append(f"# {word}")
    return lines


def wrap(words: Sequence[str], indent: str = INDENT) -> str:
    """One command, continued on further lines (`` \\``) past WIDTH columns.

    A word may hold newlines (a quoted script); the column then counts from its last line.
    """
    text, column = indent + words[0], len(indent) + len(words[0])
    for word in words[1:]:
        first = word.split("\n", 1)[0]
        if column + 1 + len(first) > WIDTH:
            text += " \\\n" + indent + INDENT * 2
            column = len(indent + INDENT * 2)
        else:
            text += " "
            column += 1
        text += word
        column = len(word.rsplit("\n", 1)[-1]) if "\n" in word else column + len(word)
    return "".join(f"{indent}{d}\n" for d in _shellcheck_directives(words)) + text


def _single_quoted(word: str) -> list[str]:
    """The contents of a word's single-quoted parts (as shlex.quote and ROOT build words)."""
    parts: list[str] = []
    quote, current = "", ""
    for char in word:
        if quote == "'" and char != "'":
            current += char
        elif quote == "'":
            parts.append(current)
            quote, current = "", ""
        elif quote == '"':
            quote = "" if char == '"' else quote
        elif char in "'\"":
            quote = char
    return parts


def _shellcheck_directives(words: Sequence[str]) -> list[str]:
    """Literal values that look like mistakes to shellcheck are meant; say so for this command."""
    literal = [part for word in words for part in _single_quoted(word)]
    codes = []
    if any("$" in part or "`" in part for part in literal):
        codes.append("SC2016")  # expressions in single quotes do not expand: they are data
    if any(part.endswith("\\") for part in literal):
        codes.append("SC1003")  # a backslash before a closing quote escapes nothing: data
    return [f"# shellcheck disable={','.join(codes)} # literal values"] if codes else []
