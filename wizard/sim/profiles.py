"""The built-in simulation profiles: recorded hosts shipped in the package."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gpuwizard.machine.detect.recording import recorded_host
from gpuwizard.machine.host import Host

DEFAULT_PROFILE = "h100x8-ubuntu2204-fresh"


class UnknownProfile(LookupError):
    """No built-in profile has that name. The message points at ``gpuwizard profiles``."""


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    directory: Path


def profiles_dir() -> Path:
    return Path(__file__).with_name("recorded-hosts")


def list_profiles() -> tuple[Profile, ...]:
    found = []
    for directory in sorted(profiles_dir().iterdir()):
        meta = directory / "profile.json"
        if meta.is_file():
            data = json.loads(meta.read_text(encoding="utf-8"))
            found.append(Profile(directory.name, str(data.get("description", "")), directory))
    return tuple(found)


def find_profile(name: str) -> Profile:
    """The built-in profile of that exact name; never a path, never this machine."""
    if not name.strip():
        problem = "no profile named"
    elif "/" in name or name.startswith("."):
        problem = f"{name!r} is a path; give a built-in profile's name"
    else:
        found = {p.name: p for p in list_profiles()}
        if name in found:
            return found[name]
        problem = f"no built-in profile {name!r}"
    raise UnknownProfile(f"{problem} (`gpuwizard profiles` lists them, e.g. {DEFAULT_PROFILE})")


def profile_host(name: str) -> Host:
    """A read-only host replaying the named profile (detection and recommendation only)."""
    return recorded_host(find_profile(name).directory)
