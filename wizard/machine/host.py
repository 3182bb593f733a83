"""The only door to the machine: files under a root, commands through a runner, NVML through a probe.

Production code builds one ``Host`` at an entry point (``local_host`` in wizard/machine/detect/__init__.py); tests and
the simulation build one over a recorded or sandboxed root. Every host path is an absolute path
on the target (``host.read_text("/etc/os-release")``) joined to ``root``; a path that would leave
the root is refused. Commands are argv lists, never a shell, run with ``LC_ALL=C``, a fixed
``PATH`` and a timeout; a missing tool is ``Output(127, "")``, a fact rather than an error.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from gpuwizard.core.facts import Nvml
from gpuwizard.core.isolation import SAFE_CWD

SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
COMMAND_ENV = {"LC_ALL": "C", "LANG": "C", "PATH": SAFE_PATH}
# pip (``recommend --online``) reads its index configuration from these; nothing else passes.
_PASSED_ENV = ("HOME", "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY")


def command_env() -> dict[str, str]:
    passed = {k: v for k, v in os.environ.items() if k in _PASSED_ENV or k.startswith("PIP_")}
    return {**passed, **COMMAND_ENV}


SESSION_KEYS = ("PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "HOME", "SUDO_USER")
"""What detection may know of the session gpuwizard was started from: where the person's
``python3`` comes from (PATH, an active venv or conda environment) and whose home to look in.
Under sudo these are what sudo passed on (its secure_path, unless ``sudo -E`` or env_keep), never
read from another process. Nothing else of the environment (tokens, keys) ever reaches a Host."""
SESSION_VALUE_MAX = 4096
"""A longer value (a PATH of thousands of entries) is cut here: detection reads a fixed few."""


def session_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The session keys of this process's environment, each value cut to a bounded length."""
    source = os.environ if environ is None else environ
    return {key: source[key][:SESSION_VALUE_MAX] for key in SESSION_KEYS if key in source}


MISSING_TOOL = 127
TIMED_OUT = 124


@dataclass(frozen=True)
class Output:
    """A finished command: its exit status and what it printed."""

    returncode: int
    stdout: str
    stderr: str = ""


class CommandRunner(Protocol):
    def __call__(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> Output: ...


class NvmlProbe(Protocol):
    def __call__(self) -> Nvml: ...


class HostPathError(ValueError):
    """A path that is not absolute, or that would escape the host root."""


Finish = Callable[[float], Output]
"""Waits (at most the given seconds) for a command started earlier, and returns its output."""


class SubprocessRunner:
    """Runs read-only probes on the real machine."""

    def __call__(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> Output:
        return self.start(argv)(timeout_s)

    def start(self, argv: Sequence[str]) -> Finish:
        """Start a probe now and wait for it later: probes started together run side by side."""
        import subprocess  # only real machines run commands; replays never need the import

        try:
            process = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=SAFE_CWD,  # never the caller's folder (a Python probe would import from it)
                env=command_env(),
            )
        except FileNotFoundError:
            missing = Output(MISSING_TOOL, "")
            return lambda _timeout_s: missing
        except PermissionError as error:
            denied = Output(126, "", str(error))
            return lambda _timeout_s: denied

        def finish(timeout_s: float) -> Output:
            try:
                stdout, stderr = process.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                stdout, _ = process.communicate()
                return Output(TIMED_OUT, _text(stdout), f"timed out after {timeout_s:g} s")
            return Output(process.returncode, _text(stdout), _text(stderr))

        return finish


def _text(data: bytes | None) -> str:
    return data.decode("utf-8", "replace") if data else ""


@dataclass(frozen=True)
class Prefetched:
    """A runner that answers some commands from runs started earlier, and the rest itself."""

    runner: CommandRunner
    started: dict[tuple[str, ...], Finish]

    def __call__(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> Output:
        finish = self.started.pop(tuple(argv), None)
        return finish(timeout_s) if finish else self.runner(argv, timeout_s=timeout_s)

    def finish_the_rest(self) -> None:
        """Wait for the runs nobody asked for, so that none outlives the reading."""
        while self.started:
            self.started.popitem()[1](10.0)


def _entry_names(folder: Path, limit: int | None) -> set[str]:
    """Up to ``limit`` names in ``folder``; none when it is missing, not a folder or not ours."""
    names: set[str] = set()
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if limit is not None and len(names) >= limit:
                break
            names.add(entry.name)
    return names


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # EACCES: pathlib ignores only "missing", and detection never needs root
        return False


@dataclass(frozen=True)
class Host:
    """A machine as gpuwizard sees it. Production: root=/, real commands, real NVML."""

    root: Path
    run: CommandRunner
    nvml: NvmlProbe
    links: Mapping[str, str] = field(default_factory=dict)
    """Symlinks of a recorded host (absolute path -> target), which wheels cannot carry."""
    empty_dirs: frozenset[str] = frozenset()
    """Empty directories of a recorded host, which git and wheels cannot carry."""
    environ: Mapping[str, str] = field(default_factory=dict)
    """The session's PATH, VIRTUAL_ENV, CONDA_PREFIX, HOME and SUDO_USER (``SESSION_KEYS``) as
    gpuwizard was started; a recorded host's come from its environ.json."""

    @contextlib.contextmanager
    def probing(self, commands: Iterable[Sequence[str]]) -> Iterator[Host]:
        """This host, with commands a reader is about to ask all started at once (a real machine's
        probes then cost the slowest one, not their sum); a host whose runner cannot start
        commands early (a recording, a replay) is itself."""
        start = getattr(self.run, "start", None)
        if start is None:
            yield self
            return
        runner = Prefetched(self.run, {tuple(argv): start(argv) for argv in commands})
        try:
            yield dataclasses.replace(self, run=runner)
        finally:
            runner.finish_the_rest()

    def path(self, absolute: str) -> Path:
        if not absolute.startswith("/"):
            raise HostPathError(f"host paths are absolute: {absolute!r}")
        parts = [p for p in absolute.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise HostPathError(f"host paths may not contain '..': {absolute!r}")
        return self.root.joinpath(*parts)

    def read_bytes(self, absolute: str, limit: int | None = None) -> bytes | None:
        """The file's bytes (at most ``limit``), or None when it is missing or unreadable."""
        try:
            with self.path(absolute).open("rb") as handle:
                return handle.read(-1 if limit is None else limit)
        except OSError:
            return None

    def read_text(self, absolute: str, limit: int | None = None) -> str | None:
        data = self.read_bytes(absolute, limit)
        return None if data is None else data.decode("utf-8", "replace")

    def exists(self, absolute: str) -> bool:
        return (
            absolute in self.links or self.is_dir(absolute) or os.path.lexists(self.path(absolute))
        )

    def is_dir(self, absolute: str) -> bool:
        """A directory here; a path this user may not look into (not root: /root/...) is not."""
        if absolute in self.empty_dirs or _is_dir(self.path(absolute)):
            return True
        prefix = absolute.rstrip("/") + "/"
        return any(p.startswith(prefix) for p in (*self.links, *self.empty_dirs))

    def listdir(self, absolute: str, limit: int | None = None) -> tuple[str, ...]:
        """Sorted entry names, or () when the directory is missing. With ``limit``, at most that
        many are read (in the directory's own order, then sorted): a folder of a million entries
        costs no more than one of ``limit``."""
        prefix = absolute.rstrip("/") + "/"
        recorded = (*self.links, *self.empty_dirs)
        implied = {p[len(prefix) :].split("/", 1)[0] for p in recorded if p.startswith(prefix)}
        names = _entry_names(self.path(absolute), limit)
        merged = sorted(names | implied)
        return tuple(merged if limit is None else merged[:limit])

    def foreign(self, absolute: str) -> bool:
        """Someone other than root and this process's user could change it (its owner, or
        group or other write permission), or it cannot be looked at: code from such a place is
        never run by gpuwizard."""
        try:
            info = self.path(absolute).stat()
        except OSError:
            return True
        return info.st_uid not in (0, os.geteuid()) or bool(info.st_mode & 0o022)

    def readlink(self, absolute: str) -> str | None:
        """The link's target as written; a recorded or sandboxed root keeps its links as data
        (``links``), so a real link under it (the strict editable install lays the package out
        as links) is not the machine's."""
        if absolute in self.links:
            return self.links[absolute]
        if self.root != Path("/"):
            return None
        try:
            return str(self.path(absolute).readlink())
        except OSError:
            return None
