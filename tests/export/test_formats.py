"""The export registry: every recorded host is covered, every format renders from the one plan,
and each file names itself as the front ends expect."""

from __future__ import annotations

import dataclasses

import pytest

from gpuwizard.export.formats import FORMATS, render
from gpuwizard.export.source import ExportError
from gpuwizard.sim.profiles import list_profiles
from tests.export.conftest import NO_GPU, PROFILES, source_for


def test_the_golden_profiles_are_every_recorded_host_with_a_gpu() -> None:
    assert sorted(PROFILES + NO_GPU) == sorted(p.name for p in list_profiles())


NEEDS_CONSOLE = ("t4-debian12-secureboot",)
"""Plans with a MOK password to type at the console: cloud-init refuses them, with the reason."""


@pytest.mark.parametrize("profile", PROFILES)
def test_every_format_renders_for_every_recorded_host(profile: str) -> None:
    source = source_for(profile)
    formats = [fmt for fmt in FORMATS if not (profile in NEEDS_CONSOLE and fmt == "cloud-init")]
    names = [f.name for fmt in formats for f in render(source, fmt)]
    expected = ["deploy.sh", "Dockerfile", "docker-host.md", "answers.yaml", "playbook.yml", "cloud-init.yaml.gz"]  # fmt: skip
    assert names == expected[: len(names)] and len(names) == len(expected) - (
        profile in NEEDS_CONSOLE
    )
    if profile in NEEDS_CONSOLE:
        with pytest.raises(ExportError, match="mok-password"):
            render(source, "cloud-init")
    for fmt in formats:
        for file in render(source, fmt):
            assert file.content.endswith("\n") and "\0" not in file.content
            assert source.version in file.content or file.name == "docker-host.md", file.name


def test_a_plan_with_nothing_left_but_the_verification_says_the_machine_is_set_up() -> None:
    source = source_for("h100x8-ubuntu2204-fresh")
    assert not source.already_set_up
    verify_only = [s if s.id == "verify-torch" else dataclasses.replace(s, actions=()) for s in source.plan.steps]  # fmt: skip
    done = dataclasses.replace(source, plan=dataclasses.replace(source.plan, steps=tuple(verify_only)))  # fmt: skip
    assert done.already_set_up
