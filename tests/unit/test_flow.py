"""The one state machine (gpuwizard.setup.flow): where a launch begins, where each answer leads,
and the rule the reboot screen lives by: it comes only from a reboot the journal records with a
boot id that has not changed."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.planner import Options, plan_for
from gpuwizard.recommend.result import Choices, Recommendation
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import target_from_facts
from gpuwizard.runner.journal import JournalData, RebootRecord, new_journal
from gpuwizard.setup import flow
from gpuwizard.setup.disk import DiskState
from gpuwizard.setup.lease import Holder
from gpuwizard.setup.request import SetupRequest
from tests.conftest import facts_of

FACTS = facts_of("h100x8-ubuntu2204-fresh")
TABLE = load_table()
BOOT_A, BOOT_B = "11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"
REQUEST = SetupRequest()


def planned() -> tuple[object, object]:
    result = recommend(TABLE, target_from_facts(FACTS, TABLE), Choices())
    assert isinstance(result, Recommendation)
    return plan_for(FACTS, result, Options(), TABLE)


SELECTION, PLAN = planned()


def journal(**changes: object) -> JournalData:
    data = new_journal("run-1", PLAN, SELECTION)  # type: ignore[arg-type]
    return dataclasses.replace(data, **changes)  # type: ignore[arg-type]


def waiting_for_reboot(commanded: bool = False) -> JournalData:
    record = RebootRecord(
        "reboot", BOOT_A, "2026-12-03T10:00:00+00:00", 1, "x" if commanded else None
    )
    steps = tuple(
        dataclasses.replace(r, state="awaiting_reboot", reason="the driver loads at boot")
        if r.id == "reboot"
        else r
        for r in journal().steps
    )
    return journal(reboot=record, steps=steps)


def disk(data: JournalData | None = None, **changes: object) -> DiskState:
    base = DiskState("none", data, None, None, BOOT_A)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("state", "stage"),
    [
        pytest.param(disk(), flow.Showing, id="nothing on disk: the machine at a glance"),
        pytest.param(disk(journal(finished=True)), flow.Showing, id="a finished run: a new one"),
        pytest.param(disk(journal(), runner="running"), flow.Installing, id="a runner at work: attach"),
        pytest.param(disk(journal()), flow.Installing, id="an unfinished run: continue it"),
        pytest.param(disk(journal(), outcome="changed"), flow.Choosing, id="the host changed: choose again"),
        pytest.param(disk(waiting_for_reboot()), flow.AwaitingReboot, id="reboot asked, same boot: offer it"),
        pytest.param(disk(waiting_for_reboot(), boot_id=BOOT_B), flow.Resuming, id="rebooted: check and go on"),
        pytest.param(disk(waiting_for_reboot(), boot_id=None), flow.Resuming, id="boot id unreadable: the check decides"),
        pytest.param(disk(problem="journal.json is damaged"), flow.Refused, id="a damaged journal: refused"),
        pytest.param(disk(journal(), driven_by=Holder(7, "pts/1", "10:00", "gpuwizard")), flow.Watching, id="another front end drives: watch"),
        pytest.param(disk(driven_by=Holder(7, "pts/1", "10:00", "gpuwizard")), flow.Refused, id="another front end is choosing: refused"),
    ],
)  # fmt: skip
def test_where_a_launch_begins(state: DiskState, stage: type) -> None:
    assert isinstance(flow.start(state, FACTS, REQUEST), stage)


def test_attaching_is_said_and_a_missed_reboot_says_so() -> None:
    attached = flow.start(disk(journal(), runner="running"), FACTS, REQUEST)
    assert isinstance(attached, flow.Installing) and attached.attach
    asked = flow.start(disk(waiting_for_reboot(commanded=True)), FACTS, REQUEST)
    assert isinstance(asked, flow.AwaitingReboot)
    assert asked.reason.startswith("the reboot did not happen (the boot_id is unchanged)")


CONTEXT = flow.Context(FACTS, REQUEST, None)


@pytest.mark.parametrize(
    ("stage", "answer", "expected", "effects"),
    [
        (flow.Showing(CONTEXT), flow.Continue(), flow.Choosing, ()),
        (flow.Choosing(CONTEXT), flow.Decided(REQUEST), flow.Choosing, (flow.MakePlan,)),
        (flow.Choosing(CONTEXT), flow.Planned(REQUEST, SELECTION, PLAN), flow.Reviewing, ()),
        (flow.Choosing(CONTEXT), flow.PlanRefused("no GPU", 3), flow.Refused, ()),
        (flow.Choosing(CONTEXT), flow.Back(), flow.Showing, ()),
        (flow.Reviewing(CONTEXT, SELECTION, PLAN), flow.Approved(), flow.Reviewing, (flow.Prepare,)),
        (flow.Reviewing(CONTEXT, SELECTION, PLAN), flow.Prepared(), flow.Installing, ()),
        (flow.Reviewing(CONTEXT, SELECTION, PLAN), flow.Back(), flow.Choosing, ()),
        (flow.Installing(PLAN, SELECTION), flow.Aborted(), flow.Installing, (flow.Exit,)),
        (flow.AwaitingReboot(PLAN, SELECTION, "reboot", "why"), flow.RebootNow(), flow.AwaitingReboot, (flow.Reboot,)),
        (flow.AwaitingReboot(PLAN, SELECTION, "reboot", "why"), flow.Rebooted(back=True), flow.Looking, (flow.Detect,)),
        (flow.AwaitingReboot(PLAN, SELECTION, "reboot", "why"), flow.Rebooted(back=False), flow.AwaitingReboot, (flow.Exit,)),
        (flow.AwaitingReboot(PLAN, SELECTION, "reboot", "why"), flow.Rebooted(back=False, failed="exit 1"), flow.Refused, ()),
        (flow.AwaitingReboot(PLAN, SELECTION, "reboot", "why"), flow.RebootLater(), flow.Installing, ()),
        (flow.Resuming(PLAN, SELECTION), flow.Continue(), flow.Looking, (flow.Detect,)),
        (flow.Benchmarking(FACTS, PLAN, SELECTION), flow.Again(), flow.Benchmarking, ()),
        (flow.Benchmarking(FACTS, PLAN, SELECTION), flow.Benchmarked("fast"), flow.Exporting, ()),
        (flow.Exporting(FACTS, PLAN, SELECTION), flow.Exported(("/x/deploy.sh",)), flow.Done, ()),
        (flow.Done(PLAN, SELECTION), flow.Continue(), flow.Done, (flow.Exit,)),
        (flow.Refused("why", 3), flow.Continue(), flow.Refused, (flow.Exit,)),
        (flow.Showing(CONTEXT), flow.Quit(), flow.Showing, (flow.Exit,)),
    ],
)  # fmt: skip
def test_where_each_answer_leads(
    stage: flow.Stage, answer: flow.Answer, expected: type, effects: tuple[type, ...]
) -> None:
    after, done = flow.next_stage(stage, answer)
    assert isinstance(after, expected)
    assert tuple(type(e) for e in done) == effects


def test_a_run_that_ends_leads_where_the_disk_says() -> None:
    installing = flow.Installing(PLAN, SELECTION)
    finished, effects = flow.next_stage(installing, flow.RunEnded(disk(journal(finished=True))))
    assert (
        isinstance(finished, flow.Looking) and finished.then_verify and effects == (flow.Detect(),)
    )
    asked, _ = flow.next_stage(installing, flow.RunEnded(disk(waiting_for_reboot())))
    assert isinstance(asked, flow.AwaitingReboot)
    failed, _ = flow.next_stage(installing, flow.RunEnded(disk(journal(), outcome="failed")))
    assert failed == installing, "a failure stays on the install, for retry or skip"


# -------------------------------------------------------------------- the reboot screen's rule
JOURNALS = st.sampled_from(
    [None, journal(), journal(finished=True), waiting_for_reboot(), waiting_for_reboot(True)]
)
DISKS = st.builds(
    lambda data, runner, outcome, boot: disk(data, runner=runner, outcome=outcome, boot_id=boot),
    JOURNALS,
    st.sampled_from(["none", "running", "finished", "interrupted"]),
    st.sampled_from([None, "done", "failed", "reboot", "changed", "paused"]),
    st.sampled_from([BOOT_A, BOOT_B, None]),
)
ANSWERS = st.one_of(
    st.sampled_from(
        [
            flow.Continue(),
            flow.Back(),
            flow.Approved(),
            flow.Prepared(),
            flow.Aborted(),
            flow.RebootNow(),
            flow.RebootLater(),
            flow.Again(),
            flow.Benchmarked(None),
            flow.Exported(()),
            flow.Freed(),
            flow.Rebooted(back=True),
            flow.Decided(REQUEST),
            flow.Planned(REQUEST, SELECTION, PLAN),
            flow.PlanRefused("x", 3),
        ]
    ),
    st.builds(flow.RunEnded, DISKS),
    st.builds(lambda d: flow.Looked(FACTS, d), DISKS),
    st.builds(flow.PrepareRaced, DISKS),
)


def pending_with_same_boot(state: DiskState) -> bool:
    return state.reboot_pending and state.rebooted is False


@given(DISKS, st.lists(ANSWERS, max_size=25))
def test_no_answer_sequence_reaches_the_reboot_screen_unless_the_journal_asks(
    first: DiskState, answers: list[flow.Answer]
) -> None:
    stage = flow.start(first, FACTS, REQUEST)
    last_disk = first
    if isinstance(stage, flow.AwaitingReboot):
        assert pending_with_same_boot(first)
    for answer in answers:
        before = stage
        stage, _ = flow.next_stage(stage, answer)
        if isinstance(answer, flow.RunEnded | flow.Looked | flow.PrepareRaced):
            last_disk = answer.disk
        if isinstance(stage, flow.AwaitingReboot) and not isinstance(before, flow.AwaitingReboot):
            assert isinstance(answer, flow.RunEnded | flow.Looked | flow.PrepareRaced), answer
            assert pending_with_same_boot(last_disk), (before, answer)
