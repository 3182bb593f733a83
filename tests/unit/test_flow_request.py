"""A second ``apply`` asking for something else than the run in progress is refused by name
(issue 14): exit 2, the differing flag, the run's value and the command's; never merged. The
same request goes on as before, and the TUI (which chooses after seeing the run) is not bound."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpuwizard.recommend.planner import Options
from gpuwizard.recommend.result import Choices
from gpuwizard.setup import flow
from gpuwizard.setup.disk import read_request, save_request
from gpuwizard.setup.request import SetupRequest, differences
from tests.unit.test_flow import FACTS, PLAN, SELECTION, disk, journal, waiting_for_reboot

RUN = SetupRequest(Choices(torch="2.14.1"), Options(cudnn=True))


def insisting(**changes: object) -> SetupRequest:
    return dataclasses.replace(RUN, insists=True, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("asked", "named"),
    [
        pytest.param(insisting(options=Options()), "--cudnn: the run in progress has on, this command asks off", id="an option dropped"),
        pytest.param(insisting(options=Options(cudnn=True, docker=True)), "--docker: the run in progress has off, this command asks on", id="an option added"),
        pytest.param(insisting(choices=Choices(torch="2.13.0")), "--torch: the run in progress has '2.14.1', this command asks '2.13.0'", id="another pin"),
        pytest.param(insisting(choices=Choices()), "--torch: the run in progress has '2.14.1', this command asks not given", id="a pin dropped"),
        pytest.param(insisting(options=Options(cudnn=True, persistence=False)), "--no-persistence: the run in progress has on, this command asks off", id="a negative flag"),
    ],
)  # fmt: skip
@pytest.mark.parametrize(
    "data",
    [
        pytest.param(journal(), id="unfinished"),
        pytest.param(waiting_for_reboot(), id="waiting for its reboot"),
    ],
)
def test_another_request_is_refused_with_exit_2_naming_what_differs(data, asked, named):
    for state in (disk(data, request=RUN), disk(data, request=RUN, runner="running")):
        stage = flow.start(state, FACTS, asked)

        assert isinstance(stage, flow.Refused)
        assert stage.code == flow.EXIT_BAD_INPUT
        assert named in stage.why
        assert "never merges" in stage.why and data.run_id in stage.why


@pytest.mark.parametrize(
    ("state", "asked", "expected"),
    [
        pytest.param(disk(journal(), request=RUN), insisting(), flow.Installing, id="the same request: go on"),
        pytest.param(disk(journal(), request=RUN, runner="running"), insisting(), flow.Installing, id="the same request: attach"),
        pytest.param(disk(journal(), request=RUN), SetupRequest(), flow.Installing, id="the TUI is not bound"),
        pytest.param(disk(journal(finished=True), request=RUN), insisting(options=Options()), flow.Showing, id="a finished run: a new plan"),
        pytest.param(disk(journal()), insisting(options=Options()), flow.Installing, id="not recorded (an older run): as before"),
    ],
)  # fmt: skip
def test_the_same_request_or_no_record_goes_on_as_before(state, asked, expected):
    assert isinstance(flow.start(state, FACTS, asked), expected)


def test_needs_nvcc_is_one_difference_not_two():
    wants_nvcc = SetupRequest(Choices(needs_nvcc=True), Options(needs_nvcc=True))
    assert differences(SetupRequest(), wants_nvcc) == [
        "--needs-nvcc: the run in progress has off, this command asks on"
    ]


def test_the_request_is_kept_beside_the_run_it_made(tmp_path: Path):
    save_request(tmp_path, "run-1", insisting())

    assert read_request(tmp_path, "run-1") == RUN, "kept without the insisting mark"
    assert read_request(tmp_path, "run-2") is None, "another run's request is no record"
    (tmp_path / "request.json").write_text("{not json")
    assert read_request(tmp_path, "run-1") is None


def test_approving_a_plan_prepares_it_with_its_request():
    context = flow.Context(FACTS, insisting(), None)
    stage = flow.Reviewing(context, SELECTION, PLAN)
    _, effects = flow.next_stage(stage, flow.Approved())
    [prepare] = effects
    assert isinstance(prepare, flow.Prepare) and prepare.request == insisting()
