"""apt's package sources and what its package lists offer: the enabled ``deb`` entries, and
which kernel header packages can be installed now.

Both matter before anything is installed: Debian's own NVIDIA driver is in non-free, which a
cloud image's sources often leave out, and a kernel's headers leave the archive a few weeks
after a newer kernel ABI arrives, so a plan that names them by ABI must first ask.
"""

from __future__ import annotations

from gpuwizard.core.facts import AptSource
from gpuwizard.core.paths import APT_SOURCES_DIR
from gpuwizard.core.version import kernel_flavour
from gpuwizard.machine.host import MISSING_TOOL, Host

SOURCES_LIST = "/etc/apt/sources.list"


def parse_one_line(text: str) -> tuple[AptSource, ...]:
    """``deb [options] URI SUITE [COMPONENT...]`` lines; deb-src and comments are skipped."""
    found = []
    for raw in text.splitlines():
        words = raw.split("#", 1)[0].split()
        if not words or words[0] != "deb":
            continue
        words = words[1:]
        if words and words[0].startswith("["):
            while words and not words[0].endswith("]"):
                words.pop(0)
            words = words[1:]
        if len(words) >= 2:
            found.append(AptSource(words[0], words[1], tuple(words[2:])))
    return tuple(found)


def _stanzas(text: str) -> list[dict[str, str]]:
    stanzas: list[dict[str, str]] = []
    current: dict[str, str] = {}
    key = ""
    for line in [*text.splitlines(), ""]:
        if line.lstrip().startswith("#"):
            continue  # a comment, even inside a stanza
        if not line.strip():
            if current:
                stanzas.append(current)
            current, key = {}, ""
        elif line[0] in " \t" and key:
            current[key] += " " + line.strip()
        elif ":" in line:
            key, _, value = line.partition(":")
            key = key.strip().lower()
            current[key] = value.strip()
    return stanzas


def parse_deb822(text: str) -> tuple[AptSource, ...]:
    """deb822 ``.sources`` stanzas (Types, URIs, Suites, Components, Enabled)."""
    found = []
    for stanza in _stanzas(text):
        if "deb" not in stanza.get("types", "").split():
            continue
        if stanza.get("enabled", "yes").lower() == "no":
            continue
        components = tuple(stanza.get("components", "").split())
        for uri in stanza.get("uris", "").split():
            found += [
                AptSource(uri, suite, components) for suite in stanza.get("suites", "").split()
            ]
    return tuple(found)


def read_apt_sources(host: Host) -> tuple[AptSource, ...]:
    found = list(parse_one_line(host.read_text(SOURCES_LIST) or ""))
    for name in host.listdir(APT_SOURCES_DIR):
        text = host.read_text(f"{APT_SOURCES_DIR}/{name}") or ""
        if name.endswith(".list"):
            found += parse_one_line(text)
        elif name.endswith(".sources"):
            found += parse_deb822(text)
    return tuple(found)


def header_packages(kernels: tuple[str, ...]) -> tuple[str, ...]:
    """The header packages to ask about: each kernel's own, then each flavour's metapackage."""
    own = [f"linux-headers-{k}" for k in kernels]
    flavours = dict.fromkeys(f for k in kernels if (f := kernel_flavour(k)))
    return tuple(dict.fromkeys([*own, *(f"linux-headers-{f}" for f in flavours)]))


def parse_policy(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``apt-cache policy A B``: (the packages apt knows, those with an installable candidate).

    apt prints a block per package it knows ("Candidate: (none)" when nothing can be
    installed) and nothing at all for a name it has never heard of.
    """
    known: list[str] = []
    offered: list[str] = []
    current = None
    for line in text.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            current = line[:-1]
            known.append(current)
        elif current and line.strip().startswith("Candidate:") and not line.endswith("(none)"):
            offered.append(current)
    return tuple(known), tuple(offered)


def read_archive_headers(host: Host, kernels: tuple[str, ...]) -> tuple[str, ...] | None:
    """Which of ``header_packages(kernels)`` apt can install; None when apt cannot tell."""
    names = header_packages(kernels)
    if not names:
        return None
    out = host.run(["apt-cache", "policy", *names], timeout_s=30)
    if out.returncode == MISSING_TOOL:
        return None
    known, offered = parse_policy(out.stdout)
    return offered if known else None  # nothing known at all: no package lists yet
