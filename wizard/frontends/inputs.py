"""Files a person hands gpuwizard by name (``--config``, ``--facts``, ``doctor --log``): checked
before they are read, read within a stated size, and decoded with a clear answer.

A FIFO would hang a read, ``/dev/zero`` would never end, a directory is not a file, and a 50 MB
"answers file" is a mistake: each is refused in one line (``InputError``) before any byte is
read. The open is non-blocking and re-checked on the descriptor, so a file swapped for a FIFO
between the check and the open cannot hang gpuwizard either. Never raises OSError.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

KIB = 1024
MIB = 1024 * KIB


class InputError(ValueError):
    """A file gpuwizard will not read; the message says why in a few words (no path)."""


def _kind(mode: int) -> str | None:
    """What a non-regular file is, in a person's words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO), not a file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a file"
    if stat.S_ISSOCK(mode):
        return "a socket, not a file"
    return "not a regular file"


def _size_text(size: int) -> str:
    return f"{size / MIB:.1f} MiB" if size >= MIB else f"{size / KIB:.0f} KiB"


def _open_regular(path: Path) -> tuple[int, int]:
    """A descriptor on a regular file, and its size; InputError for anything else."""
    try:
        kind = _kind(path.stat().st_mode)
        if kind is not None:
            raise InputError(kind)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        raise InputError(_reason(error)) from None
    info = os.fstat(fd)
    kind = _kind(info.st_mode)
    if kind is not None:  # swapped since the check above
        os.close(fd)
        raise InputError(kind)
    return fd, info.st_size


def _reason(error: OSError) -> str:
    if error.errno == errno.ENOENT:
        return "no such file"
    if error.errno in (errno.EACCES, errno.EPERM):
        return "permission denied (run as a user who can read it)"
    if error.errno == errno.ELOOP:
        return "too many levels of symbolic links"
    return (error.strerror or str(error)).lower()


def read_bytes(path: Path, limit_bytes: int, what: str) -> bytes:
    """The whole file, refused when it is larger than ``limit_bytes`` (``what`` names it)."""
    fd, size = _open_regular(path)
    try:
        if size > limit_bytes:
            raise InputError(
                f"{_size_text(size)} is too large for {what} (gpuwizard reads at most {_size_text(limit_bytes)})"
            )
        data = os.read(fd, limit_bytes + 1)  # a file growing meanwhile is caught here
        if len(data) > limit_bytes:
            raise InputError(f"grew past {_size_text(limit_bytes)} while being read")
        return data
    except OSError as error:
        raise InputError(_reason(error)) from None
    finally:
        os.close(fd)


def read_text(path: Path, limit_bytes: int, what: str) -> str:
    """The file as UTF-8 text; a binary or mis-encoded file is refused, naming where."""
    data = read_bytes(path, limit_bytes, what)
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputError(f"a binary file (a NUL byte at offset {nul}), not {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(
            f"not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start})"
        ) from None


def read_tail(path: Path, limit_bytes: int) -> str:
    """The last ``limit_bytes`` of a regular file (a log of any size), undecodable bytes replaced."""
    fd, size = _open_regular(path)
    try:
        os.lseek(fd, max(0, size - limit_bytes), os.SEEK_SET)
        chunks, left = [], limit_bytes
        while left > 0 and (chunk := os.read(fd, min(left, MIB))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks).decode("utf-8", "replace")
    except OSError as error:
        raise InputError(_reason(error)) from None
    finally:
        os.close(fd)


def control_characters(text: str) -> list[str]:
    """The control characters in ``text`` (newline and tab included), as readable escapes."""
    found = {c for c in text if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0}
    return sorted(repr(c)[1:-1] for c in found)


def check_path(text: str) -> str:
    """A path given on the command line: any bytes a file system allows, but no control
    characters (a newline in a path is a pasted mistake, and it would break every log line)."""
    bad = control_characters(text)
    if not text:
        raise InputError("an empty path")
    if bad:
        raise InputError(f"{text!r} has control characters ({', '.join(bad)}); give a plain path")
    return text
