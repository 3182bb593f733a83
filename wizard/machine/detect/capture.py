"""``gpuwizard capture-host DIR``: record exactly what detection reads, as a recorded host.

Capture runs the real ``detect_host`` through a ``RecordingHost`` that notes every file read,
directory listed, link resolved, command run and NVML answer, then writes them in the layout
``recording.py`` replays. Detection and capture therefore cannot drift: there is no second list
of paths to keep in step. Before writing, the hostname, MAC addresses and machine-id are masked.

It runs as root, often into a shared folder, so it never writes through a link someone planted:
it creates the output folder itself (0700; a path that exists, a link included, is refused) and
opens every folder and file below it relative to the folder above, with ``O_NOFOLLOW``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpuwizard import __version__
from gpuwizard.core.codec import to_jsonable
from gpuwizard.core.facts import HostFacts, Nvml
from gpuwizard.machine import dpkgdb
from gpuwizard.machine.detect import detect_host
from gpuwizard.machine.detect.installs import PACKAGE_PATTERNS
from gpuwizard.machine.detect.recording import command_key
from gpuwizard.machine.host import Host, Output

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

    def listdir(self, absolute: str, limit: int | None = None) -> tuple[str, ...]:
        names = super().listdir(absolute, limit)
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
        root=host.root,
        run=run,
        nvml=nvml,
        links=host.links,
        empty_dirs=host.empty_dirs,
        environ=host.environ,
        tape=tape,
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


class PrivateFolder:
    """A folder this process created (0700), written below only through directory descriptors.

    Every component is opened relative to the one above with ``O_NOFOLLOW``, and files are
    created with ``O_EXCL``: a symlink planted anywhere below fails the write instead of
    redirecting it onto another file.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def create(cls, path: Path) -> PrivateFolder:
        """Make ``path`` (it must not exist) and open it; FileExistsError when it does."""
        path.mkdir(mode=0o700)  # mkdir(2): an existing entry, a link included, fails
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        info = os.fstat(fd)
        if info.st_uid != os.geteuid() or info.st_mode & 0o077:
            os.close(fd)
            raise PermissionError(f"{path} changed hands while it was being created")
        return cls(fd)

    def close(self) -> None:
        os.close(self.fd)

    def _folder(self, parts: list[str]) -> int:
        """A new descriptor for the folder ``parts`` below this one, made as needed."""
        fd = os.dup(self.fd)
        for part in parts:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o700, dir_fd=fd)
            try:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            finally:
                os.close(fd)
            fd = inner
        return fd

    def write(self, relative: str, data: bytes) -> None:
        """Create the file at ``relative`` (``a/b/c``; no ``..``) with ``data``; never replace one."""
        parts = relative.split("/")
        if any(part in ("", ".", "..") for part in parts) or "\0" in relative:
            raise ValueError(f"refusing to write {relative!r}: not a plain path below the folder")
        folder = self._folder(parts[:-1])
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            fd = os.open(parts[-1], flags, 0o600, dir_fd=folder)
        finally:
            os.close(folder)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)


def write_tape(
    tape: Tape,
    out: PrivateFolder,
    facts: HostFacts,
    description: str,
    environ_seen: Mapping[str, str] | None = None,
) -> None:
    replacements, _ = _masker(facts.machine_id)
    content_paths = set(tape.files) | tape.placeholders | tape.dirs
    # A listed symlink with recorded content beneath it (sysfs device links) becomes a directory.
    links = {p: t for p, t in tape.links.items() if not _is_beneath(p, content_paths)}
    dirs = tape.dirs | {p for p in tape.links if p not in links}
    files = set(tape.files) | (tape.placeholders - set(links))
    empty_dirs = sorted(d for d in dirs if not _is_beneath(d, files | dirs - {d}) and d != "/")
    for path in sorted(tape.placeholders - set(tape.files) - set(links)):
        out.write("root/" + path.lstrip("/"), b"")
    for path, data in sorted(tape.files.items()):
        text = data.decode("utf-8", "surrogateescape")
        if path == dpkgdb.STATUS:  # megabytes of packages detection does not look at
            text = dpkgdb.relevant(text, PACKAGE_PATTERNS)
        masked = _mask(text, replacements).encode("utf-8", "surrogateescape")
        out.write("root/" + path.lstrip("/"), masked)
    commands = {
        key: {**to_jsonable(output), "stdout": _mask(output.stdout, replacements)}
        for key, output in sorted(tape.commands.items())
    }
    _write_json(out, "links.json", dict(sorted(links.items())))
    _write_json(out, "empty_dirs.json", empty_dirs)
    # The session's PATH and the rest of SESSION_KEYS: where the person's python3 came from.
    seen = environ_seen or {}
    environ = {key: _mask(value, replacements) for key, value in sorted(seen.items())}
    _write_json(out, "environ.json", environ)
    _write_json(out, "commands.json", commands)
    if tape.nvml is not None:
        _write_json(out, "nvml.json", to_jsonable(tape.nvml))
    _write_json(
        out,
        "profile.json",
        {"description": description, "captured_with": f"gpuwizard {__version__}"},
    )


def _write_json(out: PrivateFolder, name: str, data: object) -> None:
    out.write(name, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def capture_host(host: Host, directory: Path, description: str) -> HostFacts:
    """Detect through a recording host and write the recording into the new folder ``directory``.

    Raises:
        FileExistsError: ``directory`` exists (a link to one included): give a new path.
        OSError: something below it was replaced by a link, or the disk refused a write.
    """
    out = PrivateFolder.create(directory)
    try:
        recorder = recording_host(host)
        facts = detect_host(recorder)
        write_tape(recorder.tape, out, facts, description, host.environ)
    finally:
        out.close()
    return facts
