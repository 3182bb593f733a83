"""The engine's sentences tell one consistent story: which branches exist and why none fits
(issue 29), why an option that fits lost (issue 31), and what of torch 2.15.0 is unconfirmed and
how to choose it anyway (issue 30)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwizard.core import gpus
from gpuwizard.core.request import SetupRequest
from gpuwizard.recommend.engine import recommend, search
from gpuwizard.recommend.result import Recommendation, Refusal
from gpuwizard.recommend.rules import Candidate, DriverOption, failures
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import Target, target_from_spec

TABLE = load_table()


def answer(gpu: str, os: str, **pins) -> Recommendation | Refusal:
    return recommend(TABLE, target_from_spec(TABLE, [gpu], os), SetupRequest(**pins))


# ------------------------------------------------------------------------------- issue 29
@pytest.mark.parametrize("os", ["debian:12", "debian:13", "ubuntu:22.04", "rocky:9"])
def test_a_kepler_refusal_names_the_branches_its_reasons_are_about(os):
    result = answer("K80", os)
    assert isinstance(result, Refusal)
    offered = re.search(r"\(it offers ([^)]*)\)", result.reason)
    assert offered, result.reason
    in_lead = set(re.findall(r"R\d+", offered.group(1)))
    in_reasons = {re.match(r"(R\d+) does not support", r).group(1) for r in result.reasons}  # type: ignore[union-attr]
    assert in_lead == in_reasons, (result.reason, result.reasons)
    assert all("R470 is the last branch for Kepler" in r for r in result.reasons)


def test_on_debian_12_the_lead_says_where_each_branch_comes_from():
    result = answer("K80", "debian:12")
    assert isinstance(result, Refusal)
    assert "(it offers R595 and R580 from NVIDIA's repository, R535 from Debian's archive)" in (
        result.reason
    )


# ------------------------------------------------------------------------------- issue 31
def test_with_torch_2_15_pinned_r580_loses_for_what_it_lacks_not_for_what_it_has():
    result = answer("H100", "ubuntu:22.04", torch="2.15.0")
    assert isinstance(result, Recommendation)
    assert (result.driver.branch, result.torch.variant) == ("595", "cu132")
    why = {r.option: r.reason for r in result.rejected}["install R580 open"]
    assert why == (
        "it fits, but driver 580.178.04 runs cu132 only through CUDA 13 minor-version "
        "compatibility (no PTX JIT); R595 (595.91.07) runs it natively (CUDA 13.2 needs 595.45.04)"
    )


def fits(t: Target, result: Recommendation, option: DriverOption) -> bool:
    release = TABLE.torch(result.torch.version)
    assert release is not None
    build = TABLE.build(result.torch.variant, release.version, t.arch)
    return not failures(TABLE, t, Candidate(release, result.torch.variant, build, option))


KNOWN = list({m.compute_capability: m for m in gpus.all_models() if m.is_known}.values())


@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from(KNOWN),
    os=st.sampled_from([f"{o.id}:{o.version}" for o in TABLE.operating_systems]),
    torch=st.sampled_from([None, "2.15.0", "2.14.1", "2.10.0"]),
)
def test_an_option_that_fits_is_said_to_lose_to_the_chosen_driver(model, os, torch):
    t = target_from_spec(TABLE, [f"10de:{model.device_id}"], os)
    result = recommend(TABLE, t, SetupRequest(torch=torch))
    if isinstance(result, Refusal):
        return
    reasons = {r.option: r.reason for r in result.rejected}
    d = result.driver
    for option in search(TABLE, t, SetupRequest(torch=torch)).options:
        chosen = (option.branch, option.flavor) == (d.branch, d.flavor) and (
            option.source == d.source or d.source not in ("debian-archive",)
        )
        if option.action != "keep" and not chosen and fits(t, result, option):
            assert f"R{d.branch}" in reasons[option.label], (option.label, reasons[option.label])


# ------------------------------------------------------------------------------- issue 30
def test_torch_2_15_is_skipped_naming_what_is_unconfirmed_and_how_to_choose_it():
    result = answer("H100", "ubuntu:22.04")
    assert isinstance(result, Recommendation) and result.torch.version == "2.14.1"
    why = {r.option: r.reason for r in result.rejected}["torch 2.15.0"]
    assert why.startswith("its torchvision pair and its CUDA builds are UNCONFIRMED")
    assert "torchvision 0.29.2" in why and "RFC #190385" in why
    assert "pass --torch 2.15.0 to choose it anyway" in why


def test_pinned_torch_2_15_lists_both_unconfirmed_parts():
    result = answer("H100", "ubuntu:22.04", torch="2.15.0")
    assert isinstance(result, Recommendation)
    said = next(u for u in result.unconfirmed if u.startswith("torch 2.15.0"))
    assert "torchvision pair" in said and "CUDA builds" in said


def test_where_2_15_could_not_fit_anyway_the_answer_says_so_instead_of_offering_it():
    result = answer("V100", "ubuntu:22.04")
    assert isinstance(result, Recommendation)
    why = {r.option: r.reason for r in result.rejected}["torch 2.15.0"]
    assert "--torch" not in why
    assert "it would not fit here anyway: cu130 builds of torch 2.15.0 have no kernels" in why
