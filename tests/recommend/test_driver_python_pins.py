"""The driver branch, kernel-module and Python pins: accepted where the table and the host allow
them, refused with one line naming the reason where not, on several built-in profiles."""

from __future__ import annotations

import pytest

from gpuwizard.core.request import SetupRequest
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.release_pins import check_request
from gpuwizard.recommend.result import Recommendation, Refusal
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import BadInput, target_from_facts
from tests.conftest import facts_of

TABLE = load_table()
H100 = "h100x8-ubuntu2204-fresh"
V100 = "v100x4-ubuntu2204-driver535"
RTX5090 = "rtx5090-ubuntu2404-secureboot"
ROCKY = "l40sx4-rocky9-fresh"
DEBIAN = "t4-debian12-fresh"
WSL = "wsl2-ubuntu2204-rtx4090"


def on(profile: str, **pins: object) -> Recommendation | Refusal:
    return recommend(TABLE, target_from_facts(facts_of(profile), TABLE), SetupRequest(**pins))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("profile", "pins", "branch", "flavour"),
    [
        pytest.param(H100, {"driver_branch": "535"}, "535", "proprietary", id="H100: an older LTS branch"),
        pytest.param(H100, {"driver_branch": "580", "driver_flavour": "proprietary"}, "580", "proprietary", id="H100: R580 proprietary"),
        pytest.param(H100, {"driver_flavour": "open"}, "580", "open", id="H100: open modules"),
        pytest.param(V100, {"driver_branch": "580"}, "580", "proprietary", id="V100: upgrade to R580"),
        pytest.param(V100, {"driver_branch": "535"}, "535", None, id="V100: the installed branch is kept"),
        pytest.param(RTX5090, {"driver_branch": "595"}, "595", "open", id="Blackwell: R595, open"),
        pytest.param(ROCKY, {"driver_branch": "580", "driver_flavour": "proprietary"}, "580", "proprietary", id="Rocky 9: R580 proprietary"),
    ],
)  # fmt: skip
def test_a_driver_pin_that_fits_is_honoured(profile, pins, branch, flavour):
    result = on(profile, **pins)

    assert isinstance(result, Recommendation), result
    assert result.driver.branch == branch
    if flavour is not None:
        assert result.driver.flavor == flavour
    assert any("as requested" in r for r in result.reasons)


@pytest.mark.parametrize(
    ("profile", "pins", "says"),
    [
        pytest.param(V100, {"driver_flavour": "open"}, "Tesla V100 SXM2 16GB (Volta) cannot use the open kernel modules", id="open on Volta"),
        pytest.param(V100, {"driver_branch": "595"}, "R595 does not support Tesla V100 SXM2 16GB (Volta): R580 is the last branch", id="a branch past Volta"),
        pytest.param(RTX5090, {"driver_flavour": "proprietary"}, "GeForce RTX 5090 (Blackwell) requires the open kernel modules", id="proprietary on Blackwell"),
        pytest.param(RTX5090, {"driver_branch": "535"}, "driver 535.309.01 is too old for GeForce RTX 5090", id="a branch too old for the GPU"),
        pytest.param(H100, {"driver_branch": "535", "variant": "cu130"}, "cu130 (CUDA 13.0) needs driver", id="a branch too old for the build"),
        pytest.param(DEBIAN, {"driver_branch": "570"}, "R570 is not offered on Debian 12: gpuwizard installs", id="not offered on this OS"),
        pytest.param(DEBIAN, {"driver_branch": "535", "driver_flavour": "open"}, "R535 open is not offered on Debian 12 (not offered: nvidia-open-kernel-dkms", id="a flavour the branch lacks here"),
        pytest.param(WSL, {"driver_branch": "580"}, "the driver belongs to Windows (WSL)", id="the driver is Windows'"),
        pytest.param(V100, {"driver_branch": "580", "keep_driver": True}, "contradict each other: this host has R535", id="keep and another branch"),
    ],
)  # fmt: skip
def test_an_impossible_driver_pin_is_refused_in_one_line(profile, pins, says):
    result = on(profile, **pins)

    assert isinstance(result, Refusal), result
    assert says in result.reason and "\n" not in result.reason


def test_the_other_branches_are_explained_as_not_asked_for():
    result = on(H100, driver_branch="535")
    assert isinstance(result, Recommendation)
    others = {r.option: r.reason for r in result.rejected if "R580" in r.option}
    assert others and all("not the branch asked for (R535)" in why for why in others.values())


@pytest.mark.parametrize(
    ("profile", "python", "action"),
    [
        pytest.param(H100, "3.11", "install", id="Ubuntu 22.04's python3.11 beside 3.10"),
        pytest.param(H100, "3.10", "use_system", id="Ubuntu 22.04's own python3"),
        pytest.param(ROCKY, "3.11", "install", id="Rocky 9's python3.11"),
    ],
)  # fmt: skip
def test_a_python_the_os_has_is_honoured(profile, python, action):
    result = on(profile, python=python)

    assert isinstance(result, Recommendation), result
    assert (result.python.version, result.python.action, result.python.pinned) == (
        python,
        action,
        True,
    )


def test_a_python_the_release_never_had_picks_an_older_release_or_refuses():
    older = on(H100, python="3.10")
    assert isinstance(older, Recommendation) and older.torch.version != "2.15.0"
    refused = on(H100, python="3.10", torch="2.15.0")
    assert isinstance(refused, Refusal)
    assert "torch 2.15.0 has no wheels for Python 3.10" in refused.reason


def test_a_python_the_os_does_not_package_is_refused():
    result = on(H100, python="3.12")
    assert isinstance(result, Refusal)
    assert result.reason.startswith("Python 3.12 is not offered on Ubuntu 22.04: it has 3.10, 3.11")


@pytest.mark.parametrize(
    ("pins", "says"),
    [
        ({"driver_branch": "999"}, "--driver-branch 999: R999 is not in gpuwizard's table"),
        ({"driver_branch": "620"}, "gpuwizard cannot install R620 yet"),
        ({"driver_branch": "5 80"}, "expected a driver branch number like 580"),
        ({"python": "3.99"}, "no PyTorch release in gpuwizard's table has wheels for it"),
        ({"python": "3.10", "torch": "2.15"}, "torch 2.15 never shipped wheels for it"),
        ({"driver_flavour": "closed"}, "--kernel-modules 'closed': expected open or proprietary"),
    ],
)
def test_a_pin_the_table_never_offers_is_bad_input(pins, says):
    with pytest.raises(BadInput, match=says):
        check_request(TABLE, SetupRequest(**pins))
