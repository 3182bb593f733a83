"""The one state machine (gpuwizard.setup.flow): where a launch begins, where each answer leads,
and the rule the reboot screen lives by: it comes only from a reboot the journal records with a
boot id that has not changed."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuwizard.core.request import SetupRequest
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.planner import plan_for
from gpuwizard.recommend.result import Recommendation
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import target_from_facts
from gpuwizard.runner import events as ev
from gpuwizard.runner.events import StopReason
from gpuwizard.runner.journal import JournalData, RebootRecord, new_journal
from gpuwizard.setup import flow
from gpuwizard.setup.disk import DiskState
from gpuwizard.setup.flow import RunMode
from gpuwizard.setup.lease import Holder
from tests.conftest import facts_of

FACTS = facts_of("h100x8-ubuntu2204-fresh")
TABLE = load_table()
BOOT_A, BOOT_B = "11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"
REQUEST = SetupRequest()


def planned() -> tuple[object, object]:
    result = recommend(TABLE, target_from_facts(FACTS, TABLE), SetupRequest())
    assert isinstance(result, Recommendation)
    return plan_for(FACTS, result, SetupRequest(), TABLE)


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
        pytest.param(disk(), flow.ShowingMachine, id="nothing on disk: the machine at a glance"),
        pytest.param(disk(journal(finished=True)), flow.ShowingMachine, id="a finished run: a new one"),
        pytest.param(disk(journal(), runner="running"), flow.Installing, id="a runner at work: attach"),
        pytest.param(disk(journal()), flow.Installing, id="an unfinished run: continue it"),
        pytest.param(disk(journal(), stopped=StopReason.CHANGED), flow.Choosing, id="the host changed: choose again"),
        pytest.param(disk(waiting_for_reboot()), flow.AwaitingReboot, id="reboot asked, same boot: offer it"),
        pytest.param(disk(waiting_for_reboot(), boot_id=BOOT_B), flow.Resuming, id="rebooted: check and go on"),
        pytest.param(disk(waiting_for_reboot(), boot_id=None), flow.AskingReboot, id="no boot signal: the person is asked"),
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
        (flow.ShowingMachine(CONTEXT), flow.Continue(), flow.Choosing, ()),
        (flow.Choosing(CONTEXT), flow.Decided(REQUEST), flow.Choosing, (flow.MakePlan,)),
        (flow.Choosing(CONTEXT), flow.Planned(REQUEST, SELECTION, PLAN), flow.Reviewing, ()),
        (flow.Choosing(CONTEXT), flow.PlanRefused("no GPU", 3), flow.Refused, ()),
        (flow.Choosing(CONTEXT), flow.Back(), flow.ShowingMachine, ()),
        (flow.Reviewing(CONTEXT, SELECTION, PLAN), flow.Approved(), flow.Reviewing, (flow.Prepare,)),
        (flow.Reviewing(CONTEXT, SELECTION, PLAN), flow.Prepared(), flow.Installing, (flow.Follow,)),
        (flow.Reviewing(CONTEXT, SELECTION, PLAN), flow.Back(), flow.Choosing, ()),
        (flow.Installing(PLAN, SELECTION), flow.Aborted(), flow.Installing, (flow.Exit,)),
        (flow.Installing(PLAN, SELECTION), flow.RunStep(), flow.Installing, (flow.Launch,)),
        (flow.Installing(PLAN, SELECTION), flow.RunAll(), flow.Installing, (flow.Launch,)),
        (flow.Installing(PLAN, SELECTION), flow.Skip("install-headers"), flow.Installing, (flow.SkipStep,)),
        (flow.Installing(PLAN, SELECTION), flow.SecretGiven("hunter2-x"), flow.Installing, (flow.SendSecret,)),
        (flow.Installing(PLAN, SELECTION, awaiting=True), flow.RunStep(), flow.Installing, ()),
        (flow.Installing(PLAN, SELECTION, awaiting=True), flow.Skip("install-headers"), flow.Installing, ()),
        (flow.Installing(PLAN, SELECTION, awaiting=True), flow.Aborted(), flow.Installing, ()),
        (flow.AwaitingReboot(PLAN, SELECTION, "reboot", "why"), flow.RebootNow(), flow.AwaitingReboot, (flow.Reboot,)),
        (flow.AwaitingReboot(PLAN, SELECTION, "reboot", "why"), flow.Rebooted(back=True), flow.Looking, (flow.Detect,)),
        (flow.AwaitingReboot(PLAN, SELECTION, "reboot", "why"), flow.Rebooted(back=False), flow.AwaitingReboot, (flow.Exit,)),
        (flow.AwaitingReboot(PLAN, SELECTION, "reboot", "why"), flow.Rebooted(back=False, failed="exit 1"), flow.Refused, ()),
        (flow.AwaitingReboot(PLAN, SELECTION, "reboot", "why"), flow.RebootLater(), flow.Installing, (flow.Follow,)),
        (flow.Resuming(PLAN, SELECTION, checked=True), flow.Continue(), flow.Looking, (flow.Detect,)),
        (flow.Resuming(PLAN, SELECTION), flow.Continue(), flow.Resuming, ()),
        (flow.AskingReboot(PLAN, SELECTION, "reboot", "x"), flow.RebootAnswered(True), flow.Resuming, (flow.Launch,)),
        (flow.AskingReboot(PLAN, SELECTION, "reboot", "x"), flow.RebootAnswered(False), flow.Resuming, (flow.Launch,)),
        (flow.AskingReboot(PLAN, SELECTION, "reboot", "x"), flow.Continue(), flow.AskingReboot, ()),
        (flow.Benchmarking(FACTS, PLAN, SELECTION), flow.Again(), flow.Benchmarking, ()),
        (flow.Benchmarking(FACTS, PLAN, SELECTION), flow.Benchmarked("fast"), flow.Exporting, ()),
        (flow.Exporting(FACTS, PLAN, SELECTION), flow.Exported(("/x/deploy.sh",)), flow.Done, ()),
        (flow.Done(PLAN, SELECTION), flow.Continue(), flow.Done, (flow.Exit,)),
        (flow.Refused("why", 3), flow.Continue(), flow.Refused, (flow.Exit,)),
        (flow.ShowingMachine(CONTEXT), flow.Quit(), flow.ShowingMachine, (flow.Exit,)),
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
        isinstance(finished, flow.Looking)
        and finished.then == "verify"
        and effects == (flow.Detect(),)
    )
    asked, _ = flow.next_stage(installing, flow.RunEnded(disk(waiting_for_reboot())))
    assert isinstance(asked, flow.AwaitingReboot)
    failed, _ = flow.next_stage(
        installing, flow.RunEnded(disk(journal(), stopped=StopReason.FAILED))
    )
    assert failed == installing, "a failure stays on the install, for retry or skip"


# -------------------------------------------------------------------- the reboot screen's rule
JOURNALS = st.sampled_from(
    [None, journal(), journal(finished=True), waiting_for_reboot(), waiting_for_reboot(True)]
)
DISKS = st.builds(
    lambda data, runner, stopped, boot: disk(data, runner=runner, stopped=stopped, boot_id=boot),
    JOURNALS,
    st.sampled_from(["none", "running", "finished", "interrupted"]),
    st.sampled_from([None, *StopReason]),
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
            flow.RebootAnswered(True),
            flow.RebootAnswered(False),
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
            if isinstance(answer, flow.RunEnded):  # this front end saw the run ask, in this boot
                assert last_disk.reboot_pending and last_disk.rebooted is not True
            else:
                assert pending_with_same_boot(last_disk), (before, answer)
        if isinstance(stage, flow.AskingReboot) and not isinstance(before, flow.AskingReboot):
            assert isinstance(answer, flow.Looked | flow.PrepareRaced), answer
            assert last_disk.reboot_pending and last_disk.rebooted is None, (before, answer)


# ------------------------------------------------- no boot signal: the person says (issue 14)
def unjudged(**changes: object) -> DiskState:
    """A reboot asked for at 10:00, and neither a boot_id nor a btime readable, then or now."""
    data = waiting_for_reboot()
    assert data.reboot is not None
    data = dataclasses.replace(data, reboot=dataclasses.replace(data.reboot, boot_id_before=None))
    return disk(data, boot_id=None, **changes)


def test_with_no_boot_signal_the_person_is_asked_since_when() -> None:
    asked = flow.start(unjudged(), FACTS, REQUEST)
    assert asked == flow.AskingReboot(PLAN, SELECTION, "reboot", "2026-12-03 10:00 UTC", REQUEST)  # type: ignore[arg-type]
    assert flow.label(asked) == "Restarted?"


@pytest.mark.parametrize("said", [True, False])
def test_the_answer_goes_to_the_check_once_and_is_not_asked_again(said: bool) -> None:
    asked = flow.start(unjudged(), FACTS, REQUEST)
    resuming, effects = flow.next_stage(asked, flow.RebootAnswered(said))
    assert resuming == flow.Resuming(PLAN, SELECTION, REQUEST, said)  # type: ignore[arg-type]
    assert effects == (flow.Launch(RunMode.CHECK, said),), "the check is told the answer"

    up_front = flow.start(unjudged(), FACTS, REQUEST, rebooted=said)  # apply --rebooted
    assert up_front == flow.Resuming(PLAN, SELECTION, REQUEST, said)  # type: ignore[arg-type]
    assert flow.entered(up_front)[1] == (flow.Launch(RunMode.CHECK, said),)
    checked = dataclasses.replace(up_front, checked=True)
    looking, _ = flow.next_stage(checked, flow.Continue())
    assert isinstance(looking, flow.Looking) and looking.rebooted is None, "used once"


def test_a_run_that_asks_for_a_reboot_no_signal_can_judge_offers_it_in_this_boot() -> None:
    asked, _ = flow.next_stage(flow.Installing(PLAN, SELECTION), flow.RunEnded(unjudged()))  # type: ignore[arg-type]
    assert isinstance(asked, flow.AwaitingReboot), "this front end is still here: no reboot yet"


@pytest.mark.parametrize(
    ("state", "said", "refusal"),
    [
        pytest.param(disk(journal()), True, "no reboot waits here: drop it", id="no reboot pending"),
        pytest.param(disk(journal(finished=True)), False, "no reboot waits here", id="finished"),
        pytest.param(disk(waiting_for_reboot()), False, "--rebooted is not needed: the boot_id shows the machine has not restarted since 2026-12-03 10:00 UTC; drop it", id="agrees"),
        pytest.param(disk(waiting_for_reboot()), True, "--rebooted yes disagrees with the boot_id, which shows the machine has not restarted since 2026-12-03 10:00 UTC; gpuwizard goes by the boot_id: drop --rebooted", id="disagrees: not restarted"),
        pytest.param(disk(waiting_for_reboot(), boot_id=BOOT_B), False, "--rebooted no disagrees with the boot_id, which shows the machine has restarted", id="disagrees: restarted"),
        pytest.param(unjudged(btime=1_780_000_000), True, None, id="btime now, none before: still unjudged"),
    ],
)  # fmt: skip
def test_an_answer_a_boot_signal_can_give_is_refused_by_name(
    state: DiskState, said: bool, refusal: str | None
) -> None:
    stage = flow.start(state, FACTS, REQUEST, rebooted=said)
    if refusal is None:
        assert isinstance(stage, flow.Resuming) and stage.rebooted is said
        return
    assert isinstance(stage, flow.Refused) and stage.code == flow.EXIT_BAD_INPUT
    assert refusal in stage.why and "\n" not in stage.why


# ----------------------------------------------------- the install: intents and the run's news
def test_an_install_runs_from_launch_to_its_end_and_a_paused_run_all_goes_on() -> None:
    from gpuwizard.runner.view import RunView, view_of
    from tests.ui.pilots import envelopes

    step = next(s for s in PLAN.steps if not s.satisfied)  # type: ignore[attr-defined]
    stage, effects = flow.next_stage(flow.Installing(PLAN, SELECTION), flow.RunAll())  # type: ignore[arg-type]
    assert isinstance(stage, flow.Installing) and stage.mode == "running" and stage.auto
    assert effects == (flow.Launch(RunMode.ALL),)
    started = view_of(
        envelopes([ev.RunStarted("run-1", 1, None, ()), ev.StepStarted(step.id, step.title, 1)])
    )
    stage, _ = flow.next_stage(stage, flow.Launched(RunView()))
    stage, _ = flow.next_stage(stage, flow.RunProgressed(started))
    assert isinstance(stage, flow.Installing) and stage.mode == "running", "until its end is seen"
    paused = view_of(
        envelopes(
            [ev.StepFinished(step.id, True, "done"), ev.RunStopped(StopReason.PAUSED, "skipped")]
        ),
        start=started,
    )
    stage, _ = flow.next_stage(stage, flow.RunProgressed(paused))
    assert isinstance(stage, flow.Installing) and stage.mode == "running", (
        "its last words are in; it is not gone"
    )
    after, effects = flow.next_stage(stage, flow.RunEnded(disk(journal()), paused))
    assert isinstance(after, flow.Installing) and effects == (flow.Launch(RunMode.ALL),), (
        "run all goes on"
    )
    one_by_one = dataclasses.replace(stage, auto=False)
    after, effects = flow.next_stage(one_by_one, flow.RunEnded(disk(journal()), paused))
    assert isinstance(after, flow.Installing) and after.mode == "waiting" and effects == ()


def test_enter_with_a_reboot_pending_reads_the_disk_and_starts_nothing() -> None:
    from gpuwizard.runner.view import view_of
    from tests.ui.pilots import envelopes

    asked = view_of(
        envelopes(
            [
                ev.RunStarted("run-1", 1, None, ()),
                ev.RebootRequested("reboot", BOOT_A, 1, "the driver loads at boot"),
            ]
        )
    )
    stage = flow.Installing(PLAN, SELECTION, run=asked)  # type: ignore[arg-type]
    assert stage.reboot_pending and stage.mode == "waiting"
    assert flow.next_stage(stage, flow.RunStep()) == (stage, (flow.CheckDisk(),))
    assert flow.next_stage(stage, flow.RunAll()) == (stage, ())
    reboot, _ = flow.next_stage(stage, flow.RunEnded(disk(waiting_for_reboot())))
    assert isinstance(reboot, flow.AwaitingReboot)


# --------------------------------------------------------------- runner after runner that dies
@pytest.mark.parametrize(
    "stage",
    [
        pytest.param(flow.Installing(PLAN, SELECTION), id="the install"),  # type: ignore[arg-type]
        pytest.param(flow.Resuming(PLAN, SELECTION), id="the check after the reboot"),  # type: ignore[arg-type]
    ],
)
def test_a_front_end_stops_starting_runners_once_enough_died_in_a_row(stage: flow.Stage) -> None:
    """Issue 31 (5): a runner that dies at every start (a full state disk, a bug) ends the front
    end with its last words and exit 1, instead of one start after another for ever."""
    from gpuwizard.runner.view import view_of
    from tests.ui.pilots import envelopes

    why = "the runner stopped without a final word (killed?); its last output: disk full"
    died = view_of(
        envelopes([ev.RunStarted("run-1", 1, None, ()), ev.RunStopped(StopReason.CRASHED, why)])
    )
    for deaths in range(1, flow.RUNNER_DEATHS_MAX):
        after, _ = flow.next_stage(stage, flow.RunEnded(disk(journal()), died, deaths=deaths))
        assert not isinstance(after, flow.Refused), f"{deaths} death(s): the person may retry"
    after, effects = flow.next_stage(
        stage, flow.RunEnded(disk(journal()), died, deaths=flow.RUNNER_DEATHS_MAX)
    )
    assert isinstance(after, flow.Refused) and after.code == flow.EXIT_FAILED and effects == ()
    assert (
        "3 times in a row" in after.why and "disk full" in after.why and "runner.log" in after.why
    )
    _, effects = flow.next_stage(after, flow.Continue())
    assert effects == (flow.Exit(f"gpuwizard: {after.why}", flow.EXIT_FAILED),)
