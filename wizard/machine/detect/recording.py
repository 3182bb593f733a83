"""Recorded hosts: a directory that replays what detection read on a real machine.

Layout (written by ``gpuwizard capture-host``, see ``capture.py``)::

    profile.json    {"description": ..., "notes": ...}
    root/           the files detection read, at their absolute paths
    environ.json    the session's PATH, VIRTUAL_ENV, CONDA_PREFIX, HOME, SUDO_USER (absent: none)
    links.json      symlinks as data ({"/sys/bus/pci/devices/X/driver": "../nouveau"}); wheels drop links
    empty_dirs.json empty directories as data (["/lib/modules/5.15.0-126-generic"]); git drops them
    commands.json   {"uname -m": {"returncode": 0, "stdout": "x86_64\\n", "stderr": ""}, ...}
    nvml.json       an NvmlOk or NvmlUnavailable object; absent means "NVML not available"

Replay is strict: a command with no recording raises, so a new probe cannot pass by seeing "".
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwizard.core.codec import from_jsonable
from gpuwizard.core.facts import Nvml, NvmlOk, NvmlUnavailable
from gpuwizard.machine.host import Host, Output, session_environ

NO_NVML = NvmlUnavailable("no NVIDIA driver is installed (libnvidia-ml.so.1 not found)")


class UnrecordedCommand(LookupError):
    """Detection ran a command the recording does not have: capture the host again."""


@dataclass(frozen=True)
class RecordedCommands:
    outputs: Mapping[str, Output]

    def __call__(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> Output:
        del timeout_s  # a recording answers instantly
        key = shlex.join(argv)
        if key not in self.outputs:
            raise UnrecordedCommand(f"no recording for command: {key}")
        return self.outputs[key]


@dataclass(frozen=True)
class RecordedNvml:
    result: Nvml

    def __call__(self) -> Nvml:
        return self.result


def command_key(argv: Sequence[str]) -> str:
    return shlex.join(argv)


def _load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def load_commands(directory: Path) -> dict[str, Output]:
    data = _load_json(directory / "commands.json") or {}
    return {
        key: from_jsonable(Output, value, f"commands.json[{key!r}]") for key, value in data.items()
    }


def load_nvml(directory: Path) -> Nvml:
    data = _load_json(directory / "nvml.json")
    if data is None:
        return NO_NVML
    decoded: Nvml = from_jsonable(NvmlOk | NvmlUnavailable, data, "nvml.json")  # type: ignore[arg-type]  # a union is not a type[T]
    return decoded


def recorded_host(directory: Path, root: Path | None = None) -> Host:
    """A Host that replays a recording. ``root`` may point at a writable copy of ``root/``."""
    links = _load_json(directory / "links.json") or {}
    empty_dirs = _load_json(directory / "empty_dirs.json") or []
    environ = from_jsonable(
        dict[str, str], _load_json(directory / "environ.json") or {}, "environ.json"
    )
    return Host(
        root=root if root is not None else directory / "root",
        run=RecordedCommands(load_commands(directory)),
        nvml=RecordedNvml(load_nvml(directory)),
        links=dict(links),
        empty_dirs=frozenset(empty_dirs),
        environ=session_environ(environ),
    )
