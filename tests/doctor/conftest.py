"""Helpers for the doctor's tests: what the doctor reads from a built-in recorded host, and
small ways to change one fact or reading at a time."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

from gpuwizard.core.facts import HostFacts, NvmlOk
from gpuwizard.doctor.observed import Observed
from gpuwizard.doctor.readings import read_observed
from gpuwizard.machine.detect.recording import recorded_host
from tests.conftest import facts_of, profile_dir
from tests.sim.conftest import sim  # noqa: F401 - the simulated-host fixture, shared

NO_STATE = Path("/nonexistent/gpuwizard-state")
"""A state directory that does not exist: no journal, no step logs, no benchmark."""


@functools.cache
def observed_of(name: str) -> Observed:
    """What the doctor reads on a built-in profile, beyond its facts."""
    return read_observed(recorded_host(profile_dir(name)), facts_of(name), NO_STATE)


def with_boot(facts: HostFacts, **changes: Any) -> HostFacts:
    return dataclasses.replace(facts, boot=dataclasses.replace(facts.boot, **changes))


def with_installs(facts: HostFacts, **changes: Any) -> HostFacts:
    return dataclasses.replace(facts, installs=dataclasses.replace(facts.installs, **changes))


def with_gpus(facts: HostFacts, index: int | None = None, **changes: Any) -> HostFacts:
    """NVML's view of every GPU (or of GPU ``index``) changed."""
    nvml = facts.boot.nvml
    assert isinstance(nvml, NvmlOk)
    gpus = tuple(
        dataclasses.replace(g, **changes) if index is None or g.index == index else g
        for g in nvml.gpus
    )
    return with_boot(facts, nvml=dataclasses.replace(nvml, gpus=gpus))


def with_nvml(facts: HostFacts, **changes: Any) -> HostFacts:
    nvml = facts.boot.nvml
    assert isinstance(nvml, NvmlOk)
    return with_boot(facts, nvml=dataclasses.replace(nvml, **changes))
