"""/etc/os-release: which distribution and release this is.

Parsing follows os-release(5): KEY=value lines, values optionally in single or double quotes
with backslash escapes, ``#`` comments. ID_LIKE lets derivatives (Pop!_OS, AlmaLinux) map to
the base the compatibility table knows.
"""

from __future__ import annotations

import re
import shlex

from gpuwizard.core.facts import OsInfo
from gpuwizard.machine.host import Host

_LINE = re.compile(r"([A-Z][A-Z0-9_]*)=(.*)")


def parse_os_release(text: str) -> OsInfo | None:
    """Parse os-release text; None when it has no ID (an empty or foreign file)."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        match = _LINE.fullmatch(raw.strip())
        if not match:
            continue
        key, value = match.groups()
        try:
            parts = shlex.split(value, comments=True, posix=True)
        except ValueError:  # an unbalanced quote: keep the raw text rather than fail detection
            parts = [value.strip("\"'")]
        values[key] = " ".join(parts)
    if not values.get("ID"):
        return None
    # A derivative (Linux Mint) names its Ubuntu base in UBUNTU_CODENAME; prefer that.
    codename = values.get("UBUNTU_CODENAME") or values.get("VERSION_CODENAME") or None
    return OsInfo(
        id=values["ID"].lower(),
        version_id=values.get("VERSION_ID", ""),
        id_like=tuple(values.get("ID_LIKE", "").lower().split()),
        pretty_name=values.get("PRETTY_NAME", ""),
        version_codename=codename,
    )


def read_os(host: Host) -> OsInfo | None:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        text = host.read_text(path)
        if text is not None:
            return parse_os_release(text)
    return None
