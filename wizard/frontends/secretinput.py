"""Secrets given to ``gpuwizard apply`` without a terminal: a file or standard input.

For unattended runs the MOK password comes from ``--mok-password-file FILE`` (a regular file
only its owner may read: anything group- or world-accessible is refused) or from
``--mok-password-stdin`` (a pipe). One trailing newline is dropped; mokutil's rules are checked
on the way in, so a bad password fails at once, before any change. The value lives in memory
only, wrapped so no repr, log or traceback shows it; it must never be written anywhere.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from gpuwizard.steps.enroll_mok import MOK_PASSWORD_MAX, MOK_PASSWORD_RULES, mok_password_problem

READ_LIMIT = MOK_PASSWORD_MAX * 4 + 2
"""More than any valid password (and its newline) can take: a larger input is refused unread."""


class SecretInputError(ValueError):
    """The secret cannot be used; the message says why and never contains it."""


@dataclass(frozen=True)
class Secret:
    value: str = field(repr=False)

    def __str__(self) -> str:
        return "<secret>"


def _one_line(data: bytes, source: str) -> str:
    if len(data) > READ_LIMIT:
        raise SecretInputError(f"{source}: longer than any MOK password ({MOK_PASSWORD_RULES})")
    if data.endswith(b"\r\n"):
        data = data[:-2]
    elif data.endswith(b"\n"):
        data = data[:-1]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SecretInputError(f"{source}: not UTF-8 text") from None
    if "\n" in text:
        raise SecretInputError(f"{source}: holds more than one line; give the password alone")
    if (problem := mok_password_problem(text)) is not None:
        raise SecretInputError(f"{source}: {problem}")
    return text


def read_password_file(path: Path) -> Secret:
    """The MOK password from a private file (mode 0600 or 0400: owner only)."""
    source = f"--mok-password-file {path}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        raise SecretInputError(f"{source}: cannot open it ({error.strerror})") from None
    try:
        _check_private(os.fstat(fd), source, path)
        return Secret(_one_line(os.read(fd, READ_LIMIT + 1), source))
    finally:
        os.close(fd)


def _check_private(info: os.stat_result, source: str, path: Path) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise SecretInputError(f"{source}: not a regular file")
    if info.st_mode & 0o077:
        mode = stat.S_IMODE(info.st_mode)
        raise SecretInputError(
            f"{source}: group or others may access it (mode {mode:04o}); run `chmod 600 {path}` first"
        )


def read_password_stdin(stream: BinaryIO, is_tty: bool) -> Secret:
    """The MOK password piped to standard input (a terminal is refused: it would echo)."""
    source = "--mok-password-stdin"
    if is_tty:
        raise SecretInputError(
            f"{source} reads a pipe (printf '%s\\n' \"$PW\" | gpuwizard apply ...); "
            "on a terminal drop it and gpuwizard asks with the input hidden"
        )
    return Secret(_one_line(stream.read(READ_LIMIT + 1), source))
