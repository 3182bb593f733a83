"""A second ``apply`` asking for something else than the run in progress is refused by name
(issue 14): exit 2, the differing flag, the run's value and the command's; never merged. The
same request goes on as before, and the TUI (which chooses after seeing the run) is not bound."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpuwizard.core.request import SetupRequest, differences
from gpuwizard.runner.journal import Journal, JournalData
from gpuwizard.setup import flow
from tests.unit.test_flow import FACTS, PLAN, SELECTION, disk, journal, waiting_for_reboot

RUN = SetupRequest(torch="2.14.1", cudnn=True)


def made_from(data: JournalData, request: SetupRequest = RUN) -> JournalData:
    """The journal of a run made from ``request`` (its selection keeps it)."""
    return dataclasses.replace(data, selection=dataclasses.replace(data.selection, request=request))


def asked(**changes: object) -> SetupRequest:
    return dataclasses.replace(RUN, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("asked", "named"),
    [
        pytest.param(asked(cudnn=False), "--cudnn: the run in progress has on, this command asks off", id="an option dropped"),
        pytest.param(asked(docker=True), "--docker: the run in progress has off, this command asks on", id="an option added"),
        pytest.param(asked(torch="2.13.0"), "--torch: the run in progress has '2.14.1', this command asks '2.13.0'", id="another pin"),
        pytest.param(asked(torch=None), "--torch: the run in progress has '2.14.1', this command asks not given", id="a pin dropped"),
        pytest.param(asked(persistence=False), "--no-persistence: the run in progress has on, this command asks off", id="a negative flag"),
    ],
)  # fmt: skip
@pytest.mark.parametrize(
    "data",
    [
        pytest.param(made_from(journal()), id="unfinished"),
        pytest.param(made_from(waiting_for_reboot()), id="waiting for its reboot"),
    ],
)
def test_another_request_is_refused_with_exit_2_naming_what_differs(data, asked, named):
    for state in (disk(data), disk(data, runner="running")):
        stage = flow.start(state, FACTS, asked, insists=True)

        assert isinstance(stage, flow.Refused)
        assert stage.code == flow.EXIT_BAD_INPUT
        assert named in stage.why
        assert "never merges" in stage.why and data.run_id in stage.why


@pytest.mark.parametrize(
    ("state", "asked", "insists", "expected"),
    [
        pytest.param(disk(made_from(journal())), RUN, True, flow.Installing, id="the same request: go on"),
        pytest.param(disk(made_from(journal()), runner="running"), RUN, True, flow.Installing, id="the same request: attach"),
        pytest.param(disk(made_from(journal())), SetupRequest(), False, flow.Installing, id="the TUI is not bound"),
        pytest.param(disk(made_from(journal(finished=True))), asked(cudnn=False), True, flow.ShowingMachine, id="a finished run: a new plan"),
    ],
)  # fmt: skip
def test_the_same_request_or_a_front_end_that_chooses_goes_on_as_before(
    state, asked, insists, expected
):
    assert isinstance(flow.start(state, FACTS, asked, insists=insists), expected)


def test_needs_nvcc_is_one_difference_not_two():
    wants_nvcc = SetupRequest(needs_nvcc=True)
    assert differences(SetupRequest(), wants_nvcc) == [
        "--needs-nvcc: the run in progress has off, this command asks on"
    ]


def test_the_request_is_kept_in_the_journal_of_the_run_it_made(tmp_path: Path):
    Journal.create(tmp_path / "journal.json", made_from(journal()))

    assert Journal.load(tmp_path / "journal.json").data.selection.request == RUN


def test_approving_a_plan_prepares_the_selection_that_keeps_its_request():
    selection = dataclasses.replace(SELECTION, request=RUN)
    context = flow.Context(FACTS, RUN, None, insists=True)
    stage = flow.Reviewing(context, selection, PLAN)
    _, effects = flow.next_stage(stage, flow.Approved())
    [prepare] = effects
    assert isinstance(prepare, flow.Prepare) and prepare.selection.request == RUN
