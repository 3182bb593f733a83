"""The driver branch, kernel modules and Python in answers.yaml: written only when pinned (files
without a pin stay as they were), and replayed to the same request and the same plan."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuwizard.core.request import SetupRequest
from gpuwizard.export.answers import load_answers, render_answers
from gpuwizard.recommend.table import load_table
from gpuwizard.setup.plan import PlanningError, make_plan
from tests.conftest import facts_of
from tests.export.conftest import source_for

H100 = "h100x8-ubuntu2204-fresh"
PINNED = [
    SetupRequest(driver_branch="535"),
    SetupRequest(driver_branch="580", driver_flavour="proprietary"),
    SetupRequest(driver_flavour="open", python="3.11"),
    SetupRequest(python="3.11", cudnn=True),
]


def test_answers_without_a_pin_do_not_name_the_new_keys():
    text = render_answers(source_for(H100))
    assert "driver_branch" not in text and "driver_flavour" not in text and "python:" not in text


@pytest.mark.parametrize("request_", PINNED, ids=lambda r: str(r))
def test_a_pinned_request_round_trips_to_the_same_request_and_plan(request_: SetupRequest):
    facts, table = facts_of(H100), load_table()
    plan, selection = make_plan(table, facts, request_)
    base = source_for(H100)
    source = dataclasses.replace(base, plan=plan, selection=selection)

    replayed = load_answers(render_answers(source)).request

    for pin in ("driver_branch", "driver_flavour", "python"):
        if getattr(request_, pin) is not None:
            assert getattr(replayed, pin) == getattr(request_, pin)
    assert make_plan(table, facts, replayed)[0].summary == plan.summary


def test_export_source_repeats_only_the_pins_asked():
    source = source_for(H100)
    assert source.replayed.driver_branch is None and source.replayed.python is None
    asked = source_for(H100, SetupRequest(driver_branch="580"))
    assert asked.replayed.driver_branch == source.selection.driver.branch == "580"
    assert asked.replayed.python is None


PIN_VALUES = {
    "driver_branch": st.sampled_from([None, "535", "570", "580", "595"]),
    "driver_flavour": st.sampled_from([None, "open", "proprietary"]),
    "python": st.sampled_from([None, "3.10", "3.11"]),
}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries(PIN_VALUES))
def test_any_pins_that_fit_replay_from_answers_to_the_same_pins_and_plan(pins):
    facts, table = facts_of(H100), load_table()
    request_ = SetupRequest(**pins)
    try:
        plan, selection = make_plan(table, facts, request_)
    except PlanningError:
        return  # a refusal: the engine tests cover why
    base = source_for(H100)
    source = dataclasses.replace(base, plan=plan, selection=selection)

    replayed = load_answers(render_answers(source)).request

    assert {pin: getattr(replayed, pin) for pin in pins} == pins
    assert make_plan(table, facts, replayed)[0].summary == plan.summary
