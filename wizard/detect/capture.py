"""``gpuwizard capture-host DIR``: record exactly what detection reads, as a recorded host.

Capture runs the real ``detect_host`` through a ``RecordingHost`` that notes every file read,
directory listed, link resolved, command run and NVML answer, then writes them in the layout
``recording.py`` replays. Detection and capture therefore cannot drift: there is no second list
of paths to keep in step. Before writing, the hostname, MAC addresses and machine-id are masked.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpuwizard import __version__, dpkgdb
from gpuwizard.codec import to_jsonable
from gpuwizard.detect import detect_host
from gpuwizard.detect.installs import PACKAGE_PATTERNS
from gpuwizard.detect.recording import command_key
from gpuwizard.facts import HostFacts, Nvml
from gpuwizard.host import Host, Output

_MAC = re.compile(r"\b([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}\b")


@dataclass
class Tape:
    """Everything a detection run touched, keyed by absolute host path."""

    files: dict[str, bytes] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    placeholders: set[str] = field(default_factory=set)
    links: dict[str, str] = field(default_factory=dict)
    commands: dict[str, Output] = field(default_factory=dict)
    nvml: Nvml | None = None


@dataclass(frozen=True)
class RecordingHost(Host):
    """A Host that passes every call through and writes it on a tape."""

    tape: Tape = field(default_factory=Tape)

    def _note_entry(self, absolute: str) -> None:
        """Record what an existing entry is, asking the wrapped host (not the tape) each time."""
        target = Host.readlink(self, absolute)
        if target is not None:
            self.tape.links.setdefault(absolute, target)
        elif Host.is_dir(self, absolute):
            self.tape.dirs.add(absolute)
        elif Host.exists(self, absolute):
            self.tape.placeholders.add(absolute)

    def read_bytes(self, absolute: str, limit: int | None = None) -> bytes | None:
        data = super().read_bytes(absolute, limit)
        if data is not None:
            self.tape.files[absolute] = data
        return data

    def exists(self, absolute: str) -> bool:
        found = super().exists(absolute)
        if found:
            self._note_entry(absolute)
        return found

    def is_dir(self, absolute: str) -> bool:
        found = super().is_dir(absolute)
        if found:
            self.tape.dirs.add(absolute)
        return found

    def listdir(self, absolute: str) -> tuple[str, ...]:
        names = super().listdir(absolute)
        if self.is_dir(absolute):
            for name in names:
                self._note_entry(f"{absolute.rstrip('/')}/{name}")
        return names

    def readlink(self, absolute: str) -> str | None:
        target = super().readlink(absolute)
        if target is not None:
            self.tape.links[absolute] = target
        return target


def recording_host(host: Host) -> RecordingHost:
    tape = Tape()

    def run(argv: Sequence[str], *, timeout_s: float = 10.0) -> Output:
        out = host.run(argv, timeout_s=timeout_s)
        tape.commands[command_key(argv)] = out
        return out

    def nvml() -> Nvml:
        tape.nvml = host.nvml()
        return tape.nvml

    return RecordingHost(
        root=host.root, run=run, nvml=nvml, links=host.links, empty_dirs=host.empty_dirs, tape=tape
    )


def _masker(machine_id: str | None) -> tuple[list[tuple[str, str]], str | None]:
    replacements = []
    hostname = socket.gethostname()
    if len(hostname) > 2:
        replacements.append((hostname, "gpu-host"))
    masked_id = None
    if machine_id:
        masked_id = hashlib.sha256(machine_id.encode()).hexdigest()[:32]
        replacements.append((machine_id, masked_id))
    return replacements, masked_id


def _mask(text: str, replacements: list[tuple[str, str]]) -> str:
    for old, new in replacements:
        text = text.replace(old, new)
    return _MAC.sub("00:00:00:00:00:00", text)


def _is_beneath(path: str, recorded: set[str]) -> bool:
    prefix = path.rstrip("/") + "/"
    return any(other.startswith(prefix) for other in recorded)


def write_tape(tape: Tape, directory: Path, facts: HostFacts, description: str) -> None:
    replacements, _ = _masker(facts.machine_id)
    root = directory / "root"
    content_paths = set(tape.files) | tape.placeholders | tape.dirs
    # A listed symlink with recorded content beneath it (sysfs device links) becomes a directory.
    links = {p: t for p, t in tape.links.items() if not _is_beneath(p, content_paths)}
    dirs = tape.dirs | {p for p in tape.links if p not in links}
    files = set(tape.files) | (tape.placeholders - set(links))
    empty_dirs = sorted(d for d in dirs if not _is_beneath(d, files | dirs - {d}) and d != "/")
    for path in sorted(tape.placeholders - set(tape.files) - set(links)):
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
    for path, data in tape.files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        text = data.decode("utf-8", "surrogateescape")
        if path == dpkgdb.STATUS:  # megabytes of packages detection does not look at
            text = dpkgdb.relevant(text, PACKAGE_PATTERNS)
        target.write_bytes(_mask(text, replacements).encode("utf-8", "surrogateescape"))
    commands = {
        key: {**to_jsonable(out), "stdout": _mask(out.stdout, replacements)}
        for key, out in sorted(tape.commands.items())
    }
    _write_json(directory / "links.json", dict(sorted(links.items())))
    _write_json(directory / "empty_dirs.json", empty_dirs)
    _write_json(directory / "commands.json", commands)
    if tape.nvml is not None:
        _write_json(directory / "nvml.json", to_jsonable(tape.nvml))
    _write_json(
        directory / "profile.json",
        {"description": description, "captured_with": f"gpuwizard {__version__}"},
    )


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def capture_host(host: Host, directory: Path, description: str) -> HostFacts:
    """Detect through a recording host and write the recording into ``directory``."""
    recorder = recording_host(host)
    facts = detect_host(recorder)
    directory.mkdir(parents=True, exist_ok=True)
    write_tape(recorder.tape, directory, facts, description)
    return facts
