"""The only door to the machine: files under a root, commands through a runner, NVML through a probe.

Production code builds one ``Host`` at an entry point (``gpuwizard.machine.detect.local_host``); tests and
the simulation build one over a recorded or sandboxed root. Every host path is an absolute path
on the target (``host.read_text("/etc/os-release")``) joined to ``root``; a path that would leave
the root is refused. Commands are argv lists, never a shell, run with ``LC_ALL=C``, a fixed
``PATH`` and a timeout; a missing tool is ``Output(127, "")``, a fact rather than an error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from gpuwizard.core.facts import Nvml

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
    returncode: int
    stdout: str
    stderr: str = ""


class CommandRunner(Protocol):
    def __call__(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> Output: ...


class NvmlProbe(Protocol):
    def __call__(self) -> Nvml: ...


class HostPathError(ValueError):
    """A path that is not absolute, or that would escape the host root."""


class SubprocessRunner:
    """Runs read-only probes on the real machine."""

    def __call__(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> Output:
        import subprocess  # only real machines run commands; replays never need the import

        try:
            done = subprocess.run(
                list(argv),
                capture_output=True,
                stdin=subprocess.DEVNULL,
                env=command_env(),
                timeout=timeout_s,
                check=False,
            )
        except FileNotFoundError:
            return Output(MISSING_TOOL, "")
        except PermissionError as error:
            return Output(126, "", str(error))
        except subprocess.TimeoutExpired as expired:
            partial = expired.stdout.decode("utf-8", "replace") if expired.stdout else ""
            return Output(TIMED_OUT, partial, f"timed out after {timeout_s:g} s")
        return Output(
            done.returncode,
            done.stdout.decode("utf-8", "replace"),
            done.stderr.decode("utf-8", "replace"),
        )


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
