from __future__ import annotations

import pytest

from gpuwizard.core.version import (
    CudaVariant,
    Version,
    at_least,
    is_cuda_variant,
    is_version,
    variant_cuda,
)


def test_versions_compare_as_numbers_not_strings():
    assert Version.parse("12.10") > Version.parse("12.9")
    assert Version.parse("535.247.01") > Version.parse("535.104.05")
    assert Version.parse("3.10") > Version.parse("3.8")


def test_a_branch_floor_accepts_any_release_of_that_branch():
    assert at_least("580.65.06", "580")
    assert not at_least("575.57.08", "580")
    assert at_least("535.247.01", "525.60.13")
    assert not at_least("470.256.02", "525.60.13")


@pytest.mark.parametrize("text", ["", "2.x", "1..2", "v1.2", "1.2-rc1"])
def test_malformed_versions_are_refused(text):
    assert not is_version(text)
    with pytest.raises(ValueError, match="not a dotted version"):
        Version.parse(text)


@pytest.mark.parametrize(
    ("variant", "cuda"),
    [("cu118", "11.8"), ("cu126", "12.6"), ("cu130", "13.0"), ("cu132", "13.2")],
)
def test_variant_names_map_to_cuda_versions(variant, cuda):
    assert variant_cuda(variant) == cuda


@pytest.mark.parametrize("name", ["cpu", "cu12", "cu1300", "rocm6.2", "CU130", " cu130", "cu13a"])
def test_anything_but_a_cuda_build_name_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="not a CUDA build name"):
        CudaVariant.parse(name)
    assert not is_cuda_variant(name)


def test_a_wheels_local_tag_names_its_cuda_build() -> None:
    build = CudaVariant.of_wheel("2.14.1+cu130")
    assert build == CudaVariant("cu130", Version.parse("13.0"))
    assert CudaVariant.of_wheel("2.14.1") is None and CudaVariant.of_wheel("2.14.1+cpu") is None
    assert CudaVariant.parse("cu118").cuda < CudaVariant.parse("cu124").cuda
