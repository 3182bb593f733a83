"""Shared fixtures: the built-in recorded hosts, the compatibility table, fact builders."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from gpuwizard.core.facts import HostFacts
from gpuwizard.machine.detect import detect_host
from gpuwizard.machine.detect.recording import recorded_host
from gpuwizard.recommend.table import CompatTable, load_table
from gpuwizard.sim.profiles import list_profiles

PROFILE_NAMES = tuple(p.name for p in list_profiles())
TESTS = Path(__file__).parent


def profile_dir(name: str) -> Path:
    return next(p.directory for p in list_profiles() if p.name == name)


@functools.cache
def facts_of(name: str) -> HostFacts:
    """Detected facts of a built-in profile (cached: detection is pure over the recording)."""
    return detect_host(recorded_host(profile_dir(name)))


@pytest.fixture(scope="session")
def table() -> CompatTable:
    return load_table()
