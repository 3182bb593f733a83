"""``gpuwizard doctor --bundle``: one support archive (tar.gz) with everything a helper needs,
and nothing that identifies the machine or its owner.

It packs the facts, the doctor's report, the kernel log, the journal, every step log, the
benchmark results and any logs named with --log, each passed through one ``Redactor`` (the same
value gets the same placeholder in every file). Every file in it is for people, so text from
outside follows the terminal's rule (``safetext``): text files are cleaned of escapes, control
and bidi characters, JSON and YAML carry them as escapes. The archive is created 0600. It reads
the machine only through the Host door and the wizard's state directory, and changes neither.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import tarfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuwizard import __version__
from gpuwizard.core.safetext import clean, first_unsafe
from gpuwizard.doctor.diagnose import Diagnosis
from gpuwizard.doctor.observed import LogText
from gpuwizard.doctor.readings import tail_text
from gpuwizard.doctor.redact import Redactor
from gpuwizard.doctor.report import text_lines, to_json
from gpuwizard.machine.host import Host
from gpuwizard.runner.layout import JOURNAL

TOP = "gpuwizard-bundle"
LOG_BYTES = 2 * 1024 * 1024
"""Per log: the end of a long apt log is what matters."""
HOSTNAME_FILES = ("/proc/sys/kernel/hostname", "/etc/hostname")
SERIAL_FILES = tuple(
    f"/sys/class/dmi/id/{name}" for name in ("product_serial", "board_serial", "chassis_serial")
)
README = """gpuwizard support bundle

Made by `gpuwizard doctor --bundle` (gpuwizard {version}). What is inside:

  doctor.txt, doctor.json   the doctor's findings
  facts.json                what gpuwizard detected on the machine
  kernel.log                this boot's kernel messages (when they could be read)
  journal.json              the install's record: the plan, each step's state
  logs/<run>/<step>.log     every step's output
  bench/<stamp>/results.*   benchmark results
  named-logs/               logs given with --log
  manifest.json             the file list, and how many values of each kind were redacted

Redacted everywhere: hostnames, serial numbers, UUIDs (boot_id, GPU UUIDs), 32-digit ids
(machine-id), IPv4 and IPv6 addresses, MAC and InfiniBand addresses and GUIDs, and secrets
(passwords, tokens, keys, credentials in URLs). Each value has one placeholder (<ip-1>,
<host-1>, ...) in every file, so the logs still read. JSON and YAML files are redacted value
by value and stay loadable (YAML comments are dropped). Terminal escapes, control and bidi
characters are removed from text files (a carriage-return redraw keeps what a terminal would
show) and escaped in JSON and YAML. Read the files before you share them.
"""


@dataclass(frozen=True)
class Bundle:
    path: Path
    files: tuple[str, ...]
    redacted: dict[str, int]
    """How many different values of each kind were replaced."""


def _known_values(host: Host, files: Sequence[str]) -> list[str]:
    return [text.strip() for path in files if (text := host.read_text(path, limit=4096))]


def _state_files(state_dir: Path) -> list[tuple[str, Path]]:
    """(name in the archive, file) for the journal, the step logs and the benchmark results."""
    found = [(JOURNAL, state_dir / JOURNAL)]
    found += [(f"logs/{p.parent.name}/{p.name}", p) for p in sorted(state_dir.glob("logs/*/*.log"))]
    for pattern in ("bench/*/results.json", "bench/*/results.md"):
        found += [(f"bench/{p.parent.name}/{p.name}", p) for p in sorted(state_dir.glob(pattern))]
    return found


def gather(
    diagnosis: Diagnosis, state_dir: Path, named_logs: Sequence[LogText] = ()
) -> tuple[list[tuple[str, str]], list[str]]:
    """(name, text) of every file for the archive, before redaction; and what could not be read."""
    report = diagnosis.report
    entries = [
        ("doctor.txt", "\n".join(text_lines(report)) + "\n"),
        ("doctor.json", json.dumps(to_json(report, diagnosis.facts), indent=2) + "\n"),
        ("facts.json", diagnosis.facts.to_json() + "\n"),
    ]
    if diagnosis.observed.kernel_log is not None:
        entries.append(("kernel.log", diagnosis.observed.kernel_log.text))
    unread = []
    for name, path in _state_files(state_dir):
        try:
            entries.append((name, tail_text(path, LOG_BYTES)))
        except FileNotFoundError:
            continue
        except OSError as error:
            unread.append(f"{name}: {error.strerror}")
    for index, log in enumerate(named_logs, 1):
        entries.append((f"named-logs/{index}-{Path(log.path).name}", log.text))
    return entries, unread


def for_people(name: str, text: str) -> str:
    """The file as the bundle holds it: JSON and YAML that escaped every unsafe character stay
    as they are (the redactor dumps them so), anything else is cleaned as a terminal shows it."""
    structured = name.endswith((".json", ".yaml", ".yml"))
    return text if structured and first_unsafe(text) is None else clean(text)


def _add(archive: tarfile.TarFile, name: str, data: bytes, when: float) -> None:
    info = tarfile.TarInfo(f"{TOP}/{name}")
    info.size, info.mtime, info.mode = len(data), int(when), 0o600
    archive.addfile(info, io.BytesIO(data))


def write_bundle(
    path: Path,
    diagnosis: Diagnosis,
    host: Host,
    state_dir: Path,
    named_logs: Sequence[LogText] = (),
    when: float | None = None,
) -> Bundle:
    """Write the redacted archive at ``path`` (mode 0600, never over an existing file).

    Raises:
        OSError: the file exists or cannot be written.
    """
    when = time.time() if when is None else when
    redactor = Redactor(_known_values(host, HOSTNAME_FILES), _known_values(host, SERIAL_FILES))
    entries, unread = gather(diagnosis, state_dir, named_logs)
    redacted = [
        (clean(redactor.redact(name)), for_people(name, redactor.redact_file(name, text)))
        for name, text in entries
    ]
    manifest = {
        "gpuwizard": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when)),
        "files": [name for name, _ in redacted],
        "redacted": redactor.counts,
        "unread": unread + list(diagnosis.report.unread),
    }
    redacted += [
        ("README.txt", README.format(version=__version__)),
        ("manifest.json", redactor.redact_file("manifest.json", json.dumps(manifest))),
    ]
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # never clobber
    with (
        os.fdopen(descriptor, "wb") as handle,
        # an empty name: gzip would otherwise store the archive's own file name in its header
        gzip.GzipFile(filename="", mode="wb", fileobj=handle, mtime=int(when)) as packed,
        tarfile.open(fileobj=packed, mode="w") as archive,
    ):
        for name, text in redacted:
            _add(archive, name, text.encode("utf-8"), when)
    return Bundle(path, tuple(name for name, _ in redacted), redactor.counts)
