"""Export sources for the built-in profiles: the plan the wizard would make there, as reviewed."""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import sys
from pathlib import Path

import pytest

from gpuwizard.core.request import SetupRequest
from gpuwizard.export.source import ExportSource
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.planner import plan_for
from gpuwizard.recommend.result import Recommendation
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import target_from_facts
from tests.conftest import facts_of

PROFILES = (
    "a100x4-ubuntu2004-fresh",
    "h100x8-ubuntu2204-fresh",
    "t4-debian12-fresh",
    "t4-debian12-secureboot",
    "l40sx4-rocky9-fresh",
    "rtx5090-ubuntu2404-secureboot",
    "v100x4-ubuntu2204-driver535",
    "h200-ubuntu2404-driver570",
    "a100x8-ubuntu2204-neglected",
    "wsl2-ubuntu2204-rtx4090",
    "h200-vm-ubuntu2404-preinstalled",
    "a10g-ubuntu2204-dlami-conda",
    "h100pcie-ubuntu2204-lambda-stack",
    "rtx4090-ubuntu2204-driver570-torch-cu130",
)
"""Every recorded host with an NVIDIA GPU (tests/export/test_formats.py checks that): their
exports are kept as golden files and linted, fresh, driver-present, neglected and WSL alike."""
NO_GPU = ("nogpu-ubuntu2204",)
"""Recorded hosts with nothing to export."""


GOLDEN = Path(__file__).with_name("golden")


def check_golden(case: str, name: str, actual: str) -> None:
    """``actual`` equals ``golden/<case>/<name>``; GPUWIZARD_UPDATE_GOLDEN=1 rewrites it first
    (review the diff before committing)."""
    golden = GOLDEN / case / name
    if os.environ.get("GPUWIZARD_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual, encoding="utf-8")
    assert actual == golden.read_text(encoding="utf-8"), (
        f"{golden} differs: review, then regenerate"
    )


@functools.cache
def source_for(profile: str, request: SetupRequest | None = None) -> ExportSource:
    """The plan the wizard makes on this profile for this request, as an export source."""
    request = request or SetupRequest()
    facts = facts_of(profile)
    table = load_table()
    recommendation = recommend(table, target_from_facts(facts, table), request)
    assert isinstance(recommendation, Recommendation), f"{profile}: {recommendation}"
    selection, plan = plan_for(facts, recommendation, request, table)
    return ExportSource(plan, selection, facts, version="0.1.0")


ALL_OPTIONS = SetupRequest(
    docker=True, needs_nvcc=True, cudnn=True, dcgm=True, nccl=True, hold_driver=True
)
"""Every optional step chosen."""


@functools.cache
def mok_source() -> ExportSource:
    """Debian 12 with Secure Boot on and a DKMS-built driver: the plan asks for a MOK password."""
    facts = facts_of("t4-debian12-fresh")
    facts = dataclasses.replace(facts, boot=dataclasses.replace(facts.boot, secure_boot="enabled"))
    table = load_table()
    recommendation = recommend(table, target_from_facts(facts, table), SetupRequest())
    assert isinstance(recommendation, Recommendation)
    selection, plan = plan_for(facts, recommendation, SetupRequest(), table)
    return ExportSource(plan, selection, facts, version="0.1.0")


def tool(name: str) -> str:
    """A linter from the dev environment; skipped when absent, unless GPUWIZARD_CI is set."""
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        if os.environ.get("GPUWIZARD_CI"):
            pytest.fail(f"{name} is missing and GPUWIZARD_CI is set: install the test extra")
        pytest.skip(f"{name} is not installed (pip install -e '.[test]' provides it)")
    return found
