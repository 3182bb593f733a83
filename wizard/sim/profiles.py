"""The built-in simulation profiles: recorded hosts shipped in the package."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gpuwizard.detect.recording import recorded_host
from gpuwizard.host import Host

DEFAULT_PROFILE = "h100x8-ubuntu2204-fresh"


class UnknownProfile(LookupError):
    """No built-in profile has that name. The message lists the names."""


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
    profiles = list_profiles()
    for profile in profiles:
        if profile.name == name:
            return profile
    names = ", ".join(p.name for p in profiles)
    raise UnknownProfile(f"unknown profile {name!r}; built-in profiles: {names}")


def profile_host(name: str) -> Host:
    """A read-only host replaying the named profile (detection and recommendation only)."""
    return recorded_host(find_profile(name).directory)
