"""dpkg's database files: installed packages, holds, and an interrupted dpkg. Pure: detection
reads the files through the host door (``read_dpkg`` in wizard/machine/detect/installs.py) and hands the
text here.

``/var/lib/dpkg/status`` is what ``dpkg-query``, ``apt-mark showhold`` and ``dpkg --audit``
read; reading it directly costs a few milliseconds where those three programs cost about a
second (apt-mark alone takes 0.7 s on a small Debian 12 host). The format is deb-control(5):
stanzas of ``Field: value`` lines separated by blank lines; ``Status`` is "want flag status"
(dpkg(1): want install|hold|deinstall|purge|unknown, flag ok|reinstreq, status not-installed,
config-files, half-installed, unpacked, half-configured, triggers-awaited, triggers-pending,
installed). ``/var/lib/dpkg/updates/`` holds the journal of a dpkg that was interrupted before
it could fold it into the status file (apt then says "dpkg was interrupted").

``render`` writes the same format: the simulation keeps its machine's status file with it, and
``relevant`` cuts a captured status file down to the stanzas detection's answers depend on.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

STATUS = "/var/lib/dpkg/status"
UPDATES = "/var/lib/dpkg/updates"
STATUS_MAX_BYTES = 64 << 20  # a server with 5000 packages has about 5 MiB
# dpkg --audit reports these states (and the reinstreq flag) as packages left in a mess.
UNFINISHED = frozenset(
    {"half-installed", "unpacked", "half-configured", "triggers-awaited", "triggers-pending"}
)
_JOURNAL = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class Entry:
    """One package as dpkg records it."""

    name: str
    version: str
    want: str
    """install, hold, deinstall, purge or unknown: what the person asked for."""
    flag: str
    """ok, or reinstreq when dpkg needs it reinstalled."""
    state: str
    """installed, config-files, half-configured, ...: where dpkg got to."""

    @property
    def installed(self) -> bool:
        """Installed, whatever the selection (a held package is installed too)."""
        return self.state in ("installed", "triggers-awaited", "triggers-pending")

    @property
    def unfinished(self) -> bool:
        return self.flag == "reinstreq" or self.state in UNFINISHED


@dataclass(frozen=True)
class DpkgDatabase:
    """What dpkg's database says: the packages, and whether a dpkg run was cut short."""

    entries: tuple[Entry, ...]
    journal_pending: bool = False
    """updates/ holds records a dpkg run never folded in: it was killed mid-way."""

    def installed(self, patterns: Sequence[str]) -> tuple[tuple[str, str], ...]:
        """(name, version) of installed packages matching any shell pattern, by name."""
        matches = _any_of(tuple(patterns))
        found = {(e.name, e.version) for e in self.entries if e.installed and matches(e.name)}
        return tuple(sorted(found))

    @property
    def held(self) -> tuple[str, ...]:
        return tuple(sorted({e.name for e in self.entries if e.want == "hold"}))

    @property
    def interrupted(self) -> bool:
        """What ``dpkg --audit`` complains about, or a journal left in updates/."""
        return self.journal_pending or any(e.unfinished for e in self.entries)


@functools.cache
def _any_of(patterns: tuple[str, ...]) -> Callable[[str], object]:
    """One compiled test for several shell patterns (a thousand packages, a dozen patterns)."""
    return re.compile("|".join(fnmatch.translate(p) for p in patterns) or "(?!)").match


def parse_status(text: str) -> tuple[Entry, ...]:
    """The stanzas of a status file; a stanza without Package or Status is skipped."""
    entries = []
    for stanza in text.split("\n\n"):
        name, words = _field(stanza, "Package"), (_field(stanza, "Status") or "").split()
        if name is not None and len(words) == 3:
            want, flag, state = words
            entries.append(Entry(name, _field(stanza, "Version") or "", want, flag, state))
    return tuple(entries)


def _field(stanza: str, name: str) -> str | None:
    """A field's one-line value. Found with str.find, not a regular expression: a stanza's
    Description is most of its text, and a server has thousands of stanzas."""
    head = f"{name}:"
    if stanza.startswith((head, f"\n{head}")):
        start = stanza.find(head) + len(head)
    else:
        at = stanza.find(f"\n{head}")
        if at < 0:
            return None
        start = at + 1 + len(head)
    end = stanza.find("\n", start)
    return stanza[start : None if end < 0 else end].strip()


def database(status_text: str, update_names: Iterable[str]) -> DpkgDatabase:
    """The database from the status file's text and the names in updates/."""
    pending = any(_JOURNAL.fullmatch(name) for name in update_names)
    return DpkgDatabase(parse_status(status_text), journal_pending=pending)


def render(entries: Iterable[Entry]) -> str:
    """A status file holding these entries (the fields dpkg always writes for them)."""
    stanzas = [
        f"Package: {e.name}\nStatus: {e.want} {e.flag} {e.state}\nPriority: optional\n"
        f"Section: misc\nArchitecture: amd64\nVersion: {e.version}\n"
        for e in sorted(entries, key=lambda e: e.name)
    ]
    return "\n".join(stanzas)


def relevant(text: str, patterns: Sequence[str]) -> str:
    """The stanzas detection's answers depend on (a capture keeps only these): packages that
    match ``patterns``, held ones, and ones dpkg left unfinished."""
    kept = []
    for stanza in text.split("\n\n"):
        entries = parse_status(stanza)
        if entries and _matters(entries[0], patterns):
            kept.append(stanza.strip("\n") + "\n")
    return "\n".join(kept)


def _matters(entry: Entry, patterns: Sequence[str]) -> bool:
    named = any(fnmatch.fnmatchcase(entry.name, p) for p in patterns)
    return named or entry.want == "hold" or entry.unfinished
