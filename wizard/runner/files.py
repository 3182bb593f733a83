"""Crash-safe file writes: temp file in the same directory, fsync, replace, fsync the directory.

Readers see the old content or the new, never a mix, even after a power cut (dpkg's
atomic-file.c does the same; Pillai et al., OSDI 2014). Files are created with their final mode
(0600 for state), never chmod-ed afterwards. A last-good copy is kept by hard link when asked.
A temp file's name carries its writer's pid, so a clean-up after a crash removes only the temp
files of writers that are gone, never one a live process is about to rename into place.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

from gpuwizard.runner.failpoints import failpoint

TEMP_PREFIX = ".gpuwizard-tmp."


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_private_dir(path: Path) -> None:
    """Create a directory readable by its owner only (0700), whatever the umask."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o077:
        path.chmod(0o700)  # created earlier by someone else: tighten once, then keep


def write_atomic(path: Path, data: bytes, mode: int = 0o600, backup: Path | None = None) -> None:
    """Replace ``path`` with ``data`` durably; ``backup`` receives the previous file (hard link)."""
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f"{TEMP_PREFIX}{os.getpid()}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            failpoint("state.after_tmp_write")
            handle.flush()
            os.fsync(handle.fileno())
        failpoint("state.after_fsync_before_replace")
        if backup is not None and path.exists():
            with contextlib.suppress(FileNotFoundError):
                backup.unlink()
            os.link(path, backup)
        Path(tmp).replace(path)
        failpoint("state.after_replace_before_dirsync")
        fsync_dir(directory)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            Path(tmp).unlink()
        raise


def _writer_alive(temp_name: str) -> bool:
    """Whether the process that made this temp file may still be writing it."""
    pid = temp_name[len(TEMP_PREFIX) :].split(".", 1)[0]
    if not pid.isdigit():
        return False  # no pid in the name (an older gpuwizard's): nobody claims it
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, and someone else's
    return True


def remove_stale_temps(directory: Path) -> int:
    """Delete temp files a crash left behind (their writer is gone); returns how many.

    The runner calls this only once it holds the lock, and a temp file whose writer still runs
    (a front end saving its lease, another runner mid-save) is left alone: deleting it would make
    that writer's rename fail.
    """
    removed = 0
    for stale in directory.glob(f"{TEMP_PREFIX}*"):
        if _writer_alive(stale.name):
            continue
        stale.unlink(missing_ok=True)
        removed += 1
    return removed


def write_files(directory: Path, files: Sequence[tuple[str, str | bytes, int]]) -> list[Path]:
    """Write (name, text or bytes, mode) files into a folder, each crash-safe; returns their
    paths. Text is written in UTF-8.

    The folder, and every folder above it, must be one no other user can change (see
    ``unsafe_folder``): an export written where another user can swap it is not what ran.

    Raises:
        PermissionError: such a folder, named in ``strerror``; nothing was written or made.
        OSError: the folder cannot be made or written.
    """
    _refuse_unsafe(directory)
    directory.mkdir(parents=True, exist_ok=True)
    _refuse_unsafe(directory)  # as made: a link or a folder swapped in meanwhile
    written = []
    for name, content, mode in files:
        data = content if isinstance(content, bytes) else content.encode("utf-8")
        write_atomic(directory / name, data, mode)
        written.append(directory / name)
    return written


def unsafe_folder(path: Path, uid: int) -> str | None:
    """Why another user could change files written into ``path`` (None when no one can).

    ``path`` must be owned by ``uid`` or root and writable by its owner alone; each folder above
    it owned by ``uid`` or root and not writable by others unless sticky (as /tmp is: nobody
    may then rename what others own); no link on the way owned by anyone else. Folders not
    made yet are judged by the nearest one that exists.
    """
    path = path.absolute()
    for folder in (path, *path.parents):
        try:
            link = folder.lstat()
            info = folder.stat()
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(link.st_mode) and link.st_uid not in (uid, 0):
            return f"{folder} is a link owned by uid {link.st_uid}, not by you or root"
        if info.st_uid not in (uid, 0):
            return f"{folder} is owned by uid {info.st_uid}, not by you or root"
        shared = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if shared and (folder == path or not info.st_mode & stat.S_ISVTX):
            return f"{folder} is writable by other users (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def _refuse_unsafe(directory: Path) -> None:
    problem = unsafe_folder(directory, os.geteuid())
    if problem is not None:
        raise PermissionError(
            errno.EPERM,
            f"{problem}: another user could change what is written there; "
            "choose a folder only you (or root) can write",
        )
