"""The only door to the machine: files under a root, commands through a runner, NVML through a probe.

Production code builds one ``Host`` at an entry point (``gpuwizard.machine.detect.local_host``); tests and
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

    def listdir(self, absolute: str) -> tuple[str, ...]:
        """Sorted entry names, or () when the directory is missing."""
        prefix = absolute.rstrip("/") + "/"
        recorded = (*self.links, *self.empty_dirs)
        implied = {p[len(prefix) :].split("/", 1)[0] for p in recorded if p.startswith(prefix)}
        try:
            names = {entry.name for entry in self.path(absolute).iterdir()}
        except OSError:
            names = set()
        return tuple(sorted(names | implied))

    def readlink(self, absolute: str) -> str | None:
        if absolute in self.links:
            return self.links[absolute]
        try:
            return str(self.path(absolute).readlink())
        except OSError:
            return None
