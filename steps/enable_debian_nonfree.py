"""enable-debian-nonfree: let apt see Debian's own NVIDIA driver, which lives in non-free.

The driver packages are in non-free, nvidia-persistenced and nvidia-modprobe in contrib and the
GSP firmware in non-free-firmware; a Debian cloud image's sources often name ``main`` only. This
adds the three components for the release's suites, from the mirrors the machine already uses,
in a file of its own (deb822), and signed by Debian's archive key like the rest; nothing else
in apt's configuration changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import AptSource, HostFacts
from gpuwizard.core.paths import DEBIAN_NONFREE_SOURCES
from gpuwizard.core.plan import Action, Target, WriteFile
from gpuwizard.steps.base import Check, apt_update

COMPONENTS = ("contrib", "non-free", "non-free-firmware")
DEBIAN_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# Used only where the machine's sources name no mirror for its release (a broken sources file).
DEFAULT_MIRRORS = {
    "": "http://deb.debian.org/debian",
    "-security": "http://deb.debian.org/debian-security",
}


def release_suites(codename: str) -> tuple[str, ...]:
    return (codename, f"{codename}-updates", f"{codename}-security")


def missing_components(facts: HostFacts, codename: str) -> list[str]:
    have = {c for s in facts.installs.apt_sources if s.suite == codename for c in s.components}
    return [c for c in COMPONENTS if c not in have]


def mirrors(sources: tuple[AptSource, ...], codename: str) -> dict[str, list[str]]:
    """URI -> the release's suites it serves, in the machine's own order."""
    by_uri: dict[str, list[str]] = {}
    for source in sources:
        if source.suite in release_suites(codename):
            suites = by_uri.setdefault(source.uri, [])
            if source.suite not in suites:
                suites.append(source.suite)
    if not by_uri:
        for suffix, uri in DEFAULT_MIRRORS.items():
            suites = [f"{codename}{suffix}"] + ([f"{codename}-updates"] if not suffix else [])
            by_uri[uri] = suites
    return by_uri


def sources_text(sources: tuple[AptSource, ...], codename: str) -> str:
    stanzas = [
        f"Types: deb\nURIs: {uri}\nSuites: {' '.join(suites)}\n"
        f"Components: {' '.join(COMPONENTS)}\nSigned-By: {DEBIAN_KEYRING}\n"
        for uri, suites in mirrors(sources, codename).items()
    ]
    head = (
        "# Written by gpuwizard: Debian's own NVIDIA driver is in non-free; it also needs contrib\n"
        "# (nvidia-persistenced, nvidia-modprobe) and non-free-firmware (the GSP firmware).\n"
    )
    return head + "\n".join(stanzas)


@dataclass(frozen=True)
class EnableDebianNonFree:
    codename: str
    id: str = "enable-debian-nonfree"
    title: str = "Enable Debian's contrib, non-free and non-free-firmware components"
    why: str = (
        "Debian's own NVIDIA driver is in non-free, two of its helpers in contrib and its GPU "
        "firmware in non-free-firmware. They are added for this release from the mirrors already "
        "in use, in a file of their own, signed by Debian's archive key like the rest."
    )
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    def check(self, facts: HostFacts) -> Check:
        absent = missing_components(facts, self.codename)
        if absent:
            return Check(False, f"apt's sources for {self.codename} lack {', '.join(absent)}")
        return Check(
            True, f"contrib, non-free and non-free-firmware are enabled for {self.codename}"
        )

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        text = sources_text(facts.installs.apt_sources, self.codename)
        return (WriteFile(DEBIAN_NONFREE_SOURCES, text), apt_update())

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
