"""The doctor's gpu-support check takes a GPU's last branch from NVIDIA's lists where the table
has one (issue 30): the A100 PCIe 40GB 10de:20b1 and the V100 SXM2 16GB 10de:1df5 are named by
no driver README after R470, though their chips go on to R580 and beyond."""

from __future__ import annotations

import dataclasses

import pytest

from gpuwizard.core import gpus
from gpuwizard.core.facts import HostFacts
from gpuwizard.doctor.driver import check_gpu_support
from gpuwizard.recommend.table import CompatTable
from tests.conftest import facts_of
from tests.doctor.conftest import observed_of

V100 = "v100x4-ubuntu2204-driver535"


def with_model(facts: HostFacts, device_id: str) -> HostFacts:
    model = gpus.lookup(device_id)
    assert model is not None
    hardware = facts.hardware
    changed = tuple(dataclasses.replace(g, model=model) for g in hardware.gpus)
    return dataclasses.replace(facts, hardware=dataclasses.replace(hardware, gpus=changed))


@pytest.mark.parametrize("device_id", ["1df5", "20b1"])
def test_a_gpu_nvidia_s_lists_stop_naming_after_r470_is_a_problem_on_r535(
    device_id: str, table: CompatTable
) -> None:
    facts = with_model(facts_of(V100), device_id)
    found = check_gpu_support(facts, observed_of(V100), table)
    assert found is not None and found.severity == "problem"
    assert "supported only up to R470" in found.explanation
    assert "last branch for the" in " ".join(found.evidence)


def test_the_chip_s_last_branch_still_holds_for_a_gpu_the_lists_go_on_naming(
    table: CompatTable,
) -> None:
    found = check_gpu_support(facts_of(V100), observed_of(V100), table)
    assert found is not None and found.severity == "ok"
