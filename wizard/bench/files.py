"""The benchmark's folders and files: the owner's alone (0700, 0600), whatever the umask.

A run's folder under the state directory (bench/<stamp>) holds the raw stream, the worker's
stderr and the results, which can quote the machine; as the runner's state, nobody else may
read them. Never opens anything outside the folder it is given.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO, TextIO

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def make_private_dir(path: Path) -> Path:
    """``path`` and any missing parents made 0700 (an existing one is tightened), whatever the umask."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    for made in (path, *missing):
        if made.stat().st_mode & 0o077:
            made.chmod(FOLDER_MODE)
    return path


def _private_fd(path: Path, append: bool) -> int:
    """A descriptor of a file created 0600 (the umask cannot widen it)."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    return os.open(path, flags, FILE_MODE)


def private_text(path: Path, append: bool = False) -> TextIO:
    return os.fdopen(_private_fd(path, append), "a" if append else "w", encoding="utf-8")


def private_binary(path: Path, append: bool = False) -> BinaryIO:
    return os.fdopen(_private_fd(path, append), "ab" if append else "wb")
