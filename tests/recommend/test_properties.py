"""Properties of the engine over the whole catalogue and every supported OS."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwizard import gpus
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.result import Choices, Recommendation, Refusal
from gpuwizard.recommend.rules import Candidate, failures
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import Target

TABLE = load_table()
MODELS = gpus.all_models()
SYSTEMS = [(o.id, o.version) for o in TABLE.operating_systems]


def target(models, os_id, version, driver=None):
    return Target(
        gpus=tuple(models),
        os_id=os_id,
        os_version=version,
        python=TABLE.os_release(os_id, version).python3,
        secure_boot="disabled",
    )  # type: ignore[union-attr]


def check(result: Recommendation | Refusal, t: Target) -> None:
    if isinstance(result, Refusal):
        assert result.reason.strip(), "a refusal must say why"
        return
    winner = Candidate(
        TABLE.torch(result.torch.version),
        result.torch.variant,
        TABLE.build(result.torch.variant, result.torch.version, t.arch),
        _option(result),
    )  # type: ignore[arg-type]
    assert failures(TABLE, t, winner) == [], "the chosen combination passes every rule"
    assert all(r.option and r.reason for r in result.rejected), "every rejection has a reason"
    assert result.reasons


def _option(result: Recommendation):
    from gpuwizard.recommend.rules import DriverOption

    return DriverOption(
        result.driver.action, result.driver.branch, result.driver.version, result.driver.flavor
    )


@pytest.mark.parametrize(("os_id", "version"), SYSTEMS)
def test_every_gpu_in_the_catalogue_gets_a_recommendation_or_a_reasoned_refusal(os_id, version):
    for model in MODELS:
        t = target([model], os_id, version)
        check(recommend(TABLE, t), t)


def test_every_turing_or_newer_datacenter_gpu_is_served_on_ubuntu_2204():
    for model in MODELS:
        if (
            model.compute_capability
            and float(model.compute_capability) >= 7.5
            and model.compute_capability != "11.0"
        ):
            result = recommend(TABLE, target([model], "ubuntu", "22.04"))
            assert isinstance(result, Recommendation), (model.name, getattr(result, "reason", ""))


@settings(max_examples=60, deadline=None)
@given(
    picks=st.lists(st.sampled_from(MODELS), min_size=1, max_size=3),
    system=st.sampled_from(SYSTEMS),
    driver=st.sampled_from(
        [None, "470.256.02", "535.247.01", "570.133.20", "580.95.05", "595.71.05"]
    ),
    torch=st.sampled_from([None, "2.15.0", "2.14.1", "2.8.0", "2.5.1", "2.0.1"]),
    keep=st.booleans(),
)
def test_mixed_hosts_and_pins_always_get_an_answer_with_reasons(picks, system, driver, torch, keep):
    from gpuwizard.recommend.target import ExistingDriver

    base = target(picks, *system)
    t = Target(**{**base.__dict__, "driver": ExistingDriver(driver, None) if driver else None})
    result = recommend(TABLE, t, Choices(torch=torch, keep_driver=keep and driver is not None))
    check(result, t)
