"""The wizard's one state machine, for the TUI and ``gpuwizard apply`` alike. Pure.

``start(disk, facts, request)`` is the only relaunch rule: what is on disk (the runner, the
journal, the boot) says where a front end begins, so every launch of either lands on the same
stage. ``next_stage(stage, answer)`` is the only transition rule: a person's answer (or an
effect's result, or the run's progress) leads to the next stage and the effects a driver must
carry out. Front ends show stages (wizard/setup/stages.py) and turn what happens into answers;
they decide nothing about where to go. One loop runs it for both (wizard/setup/conduct.py).

The reboot screen can only come from the journal: a reboot it records with a boot id that has
not changed (``start``, and ``RunEnded`` re-reading the disk). No replayed event leads there.
Where no boot signal can judge a recorded reboot, the person is asked whether the machine
restarted (``AskingReboot``), or answered up front (``apply --rebooted``): the answer goes to the
runner's check, which keeps it in the journal. An answer where a signal can judge is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import Enum

from gpuwizard.core.facts import HostFacts, judge_boot
from gpuwizard.core.plan import Plan, assert_never
from gpuwizard.core.request import SetupRequest, differences
from gpuwizard.core.selection import Selection
from gpuwizard.runner import events as ev
from gpuwizard.runner.events import StopReason
from gpuwizard.runner.journal import JournalData
from gpuwizard.runner.view import RunView, Stopped
from gpuwizard.setup.disk import DiskState
from gpuwizard.setup.stages import (
    AfterSetup,
    AskingReboot,
    AwaitingReboot,
    Benchmarking,
    Choosing,
    Context,
    Done,
    Exporting,
    Following,
    Installing,
    Looking,
    Refused,
    Resuming,
    Reviewing,
    SetUp,
    ShowingMachine,
    Stage,
    Verifying,
    Watching,
    label,
)

__all__ = [  # the stages, as the rules' callers name them (flow.Installing)
    "AskingReboot", "AwaitingReboot", "Benchmarking", "Choosing", "Context", "Done", "Exporting",
    "Following", "Installing", "Looking", "Refused", "Resuming", "Reviewing", "ShowingMachine", "Stage",
    "Verifying", "Watching", "label",
]  # fmt: skip

EXIT_DONE, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_UNSUPPORTED, EXIT_REBOOT = 0, 1, 2, 3, 10


# ------------------------------------------------------------------------------------ answers
@dataclass(frozen=True)
class Looked:
    facts: HostFacts
    disk: DiskState


@dataclass(frozen=True)
class Continue:
    pass


@dataclass(frozen=True)
class Back:
    pass


@dataclass(frozen=True)
class Quit:
    pass


@dataclass(frozen=True)
class Decided:
    request: SetupRequest


@dataclass(frozen=True)
class Planned:
    request: SetupRequest
    selection: Selection
    plan: Plan


@dataclass(frozen=True)
class PlanRefused:
    why: str
    code: int
    no_gpu: bool = False


@dataclass(frozen=True)
class Approved:
    pass


@dataclass(frozen=True)
class Prepared:
    pass


@dataclass(frozen=True)
class PrepareRaced:
    """Another front end started a run since the machine was looked at."""

    disk: DiskState


@dataclass(frozen=True)
class PrepareBusy:
    why: str


@dataclass(frozen=True)
class RunStep:
    """Run the next step; with none left, check them all once more and end the run."""


@dataclass(frozen=True)
class RunAll:
    """Run every step that is left, one after another, up to the end or a reboot."""


@dataclass(frozen=True)
class Retry:
    """Run the step that failed again."""


@dataclass(frozen=True)
class Skip:
    """Leave a step undone: the runner marks it skipped and goes on after it."""

    step: str


@dataclass(frozen=True)
class SecretGiven:
    """The person's answer to a secret the runner asks for (the MOK password): sent, never kept."""

    value: str = field(repr=False)


@dataclass(frozen=True)
class CancelStep:
    """The person will not give the secret the running step waits for: the step is stopped
    (it fails, and a retry asks again)."""


@dataclass(frozen=True)
class Launched:
    """A runner was launched, or found at work; ``view`` is the run as it stood then, and
    ``news`` the history read to get there (told where a runner was found at work)."""

    view: RunView
    news: tuple[ev.RunEvent, ...] = ()


@dataclass(frozen=True)
class RunProgressed:
    """The run moved on: ``news`` are the events read, ``view`` the run they fold into."""

    view: RunView
    news: tuple[ev.RunEvent, ...] = ()


@dataclass(frozen=True)
class RunEnded:
    """The runner this front end launched or followed is gone (done, reboot, failed, paused,
    killed...): the disk as it left it, and the run as it folds in the end (None: unchanged)."""

    disk: DiskState
    view: RunView | None = None
    news: tuple[ev.RunEvent, ...] = ()
    deaths: int = 0
    """Runners in a row, this one included, that died rather than stopped (killed, never came
    up, crashed on a bug): a front end stops after ``RUNNER_DEATHS_MAX``."""


@dataclass(frozen=True)
class Aborted:
    pass


@dataclass(frozen=True)
class Freed:
    """The front end that drove the setup has gone: look again, and maybe drive."""


@dataclass(frozen=True)
class RebootNow:
    pass


@dataclass(frozen=True)
class RebootLater:
    pass


@dataclass(frozen=True)
class RebootAnswered:
    """The person's answer to "did this machine restart since the reboot was asked for?"."""

    rebooted: bool


@dataclass(frozen=True)
class Revisit:
    """Verify, benchmark or export the setup gpuwizard finished on this machine."""

    stage: AfterSetup


@dataclass(frozen=True)
class Again:
    """Run the benchmark again."""


@dataclass(frozen=True)
class Benchmarked:
    headline: str | None
    """What the benchmark concluded and where its results are; None when it was skipped."""


@dataclass(frozen=True)
class Exported:
    paths: tuple[str, ...]


@dataclass(frozen=True)
class Rebooted:
    back: bool
    """The machine is back already (the simulation); a real one takes this process down."""
    failed: str | None = None
    """Why the reboot did not happen (its command failed)."""


Answer = (
    Looked
    | RunStep
    | RunAll
    | Retry
    | Skip
    | SecretGiven
    | CancelStep
    | Launched
    | RunProgressed
    | Continue
    | Back
    | Quit
    | Decided
    | Planned
    | PlanRefused
    | Approved
    | Prepared
    | PrepareRaced
    | PrepareBusy
    | RunEnded
    | Aborted
    | Freed
    | RebootNow
    | RebootLater
    | RebootAnswered
    | Rebooted
    | Again
    | Revisit
    | Benchmarked
    | Exported
)


# ------------------------------------------------------------------------------------ effects
class RunMode(Enum):
    """What a runner is launched to do (its flags)."""

    STEP = ("--one-step",)
    """The next step that needs work, then stop (the TUI asks before each)."""
    ALL = ()
    """Every step that needs work, up to the end or a reboot."""
    CHECK = ("--check-only",)
    """After a reboot: check what waited for it, run nothing."""
    REBOOT = ("--reboot-now",)
    """Carry out the reboot the journal waits for (the person confirmed it)."""


@dataclass(frozen=True)
class Detect:
    """Look at the machine and the disk; answers Looked."""


@dataclass(frozen=True)
class MakePlan:
    """Recommend and plan for the request; answers Planned or PlanRefused."""

    context: Context


@dataclass(frozen=True)
class Follow:
    """Follow the run: read its history, and the runner at work if one is. Answers
    RunProgressed, or Launched when a runner is at work; its progress comes as RunProgressed
    (and RunEnded, once the runner followed is gone)."""


@dataclass(frozen=True)
class Launch:
    """Launch a runner; answers Launched (a runner that does not come up is told by its end)."""

    mode: RunMode
    rebooted: bool | None = None
    """The person's answer to "did it restart?" (the check after a reboot no signal judges)."""


@dataclass(frozen=True)
class SkipStep:
    """Mark a step to be skipped; answers RunProgressed with a failure there answered."""

    step: str


@dataclass(frozen=True)
class SendSecret:
    """Hand the runner the secret it waits for. No answer."""

    value: str = field(repr=False)


@dataclass(frozen=True)
class DeclineSecret:
    """Tell the runner the secret it waits for will not come. No answer."""


@dataclass(frozen=True)
class CheckDisk:
    """Read where a run that stopped leaves the disk; answers RunEnded."""


@dataclass(frozen=True)
class Prepare:
    """Make the reviewed plan the run on disk; answers Prepared, PrepareRaced or PrepareBusy."""

    facts: HostFacts
    selection: Selection
    plan: Plan
    seen_run: str | None


@dataclass(frozen=True)
class Reboot:
    """Reboot the machine the person confirmed; answers Rebooted."""


@dataclass(frozen=True)
class Exit:
    message: str
    code: int


Effect = (
    Detect
    | MakePlan
    | Prepare
    | Follow
    | Launch
    | SkipStep
    | SendSecret
    | DeclineSecret
    | CheckDisk
    | Reboot
    | Exit
)

RUNNER_DEATHS_MAX = 3
"""Runners in a row that may die before a front end stops starting them (a full or read-only
state disk, a damaged file or a bug kills every one the same way)."""
ABORTED = "Install aborted. Finished steps stay done; run gpuwizard again to continue."
REBOOTING = "The machine is rebooting. Log in again and run the same command to continue."
CHANGED = "The machine changed since the plan was reviewed: choose and review again."


# ----------------------------------------------------------------------------------- the rules
def start(
    disk: DiskState,
    facts: HostFacts,
    request: SetupRequest,
    *,
    insists: bool = False,
    rebooted: bool | None = None,
) -> Stage:
    """Where a front end begins, from the disk alone (and the machine it looked at);
    ``insists`` and ``rebooted`` as ``Looking`` has them."""
    journal = disk.journal
    context = Context(facts, request, disk.run_id, insists)
    if (refused := _refused(disk, request, insists, rebooted)) is not None:
        return Refused(refused, EXIT_BAD_INPUT)
    if disk.driven_by is not None:  # another front end decides; this one may only watch
        if journal is not None and not journal.finished:
            return Watching(journal.plan, journal.selection, disk.driven_by, request)
        who = disk.driven_by.describe()
        why = f"another gpuwizard is setting up this machine: {who}; run this again once it is done"
        return Refused(why, EXIT_FAILED)
    if journal is None:
        return ShowingMachine(context)
    if disk.runner == "running":
        return Installing(journal.plan, journal.selection, attach=True, request=request)
    if journal.finished:
        return ShowingMachine(context, SetUp(journal.run_id, journal.updated_at, journal.left))
    if disk.stopped is StopReason.CHANGED:
        return Choosing(context, CHANGED)
    if journal.reboot is not None:
        return _reboot_recorded(journal, disk.rebooted, request, rebooted)
    return Installing(journal.plan, journal.selection, request=request)


def _reboot_recorded(
    journal: JournalData, rebooted: bool | None, request: SetupRequest, said: bool | None
) -> Stage:
    """A reboot the journal waits for: not happened (offered again), happened (the check), or
    no boot signal can tell (the person says; or ``said`` up front with --rebooted)."""
    assert journal.reboot is not None
    if rebooted is False:
        return _reboot_asked(journal, Installing(journal.plan, journal.selection, request=request))
    if rebooted is None and said is None:
        since = when(journal.reboot.requested_at)
        return AskingReboot(journal.plan, journal.selection, journal.reboot.step, since, request)
    return Resuming(journal.plan, journal.selection, request, said if rebooted is None else None)


def when(stamp: str) -> str:
    """A journal's ISO time for people: "2026-12-03 08:00 UTC" (as written when unreadable)."""
    try:
        return datetime.fromisoformat(stamp).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return stamp


def _refused(
    disk: DiskState, request: SetupRequest, insists: bool, rebooted: bool | None
) -> str | None:
    """Why no front end may go on from this disk at all: a damaged journal, another request,
    an answer to a question that is not asked."""
    if disk.problem is not None:
        return disk.problem
    return (_another_request(disk, request) if insists else None) or _answer_refused(disk, rebooted)


def _answer_refused(disk: DiskState, rebooted: bool | None) -> str | None:
    """Why ``--rebooted`` must not be taken: no reboot waits to be judged, or a boot signal
    judges it (and the signal, not the person, is trusted: it says so when they disagree)."""
    journal = disk.journal
    if rebooted is None:
        return None
    if journal is None or journal.finished or journal.reboot is None:
        return "--rebooted answers whether the machine restarted, and no reboot waits here: drop it"
    if disk.rebooted is None:
        return None
    signal = judge_boot(journal.reboot.mark, disk.boot).signal
    source = "boot_id" if signal == "boot_id" else "boot time in /proc/stat"
    did = "restarted" if disk.rebooted else "not restarted"
    since = when(journal.reboot.requested_at)
    if disk.rebooted == rebooted:
        return f"--rebooted is not needed: the {source} shows the machine has {did} since {since}; drop it"
    return (
        f"--rebooted {'yes' if rebooted else 'no'} disagrees with the {source}, which shows the "
        f"machine has {did} since {since}; gpuwizard goes by the {source}: drop --rebooted"
    )


def _another_request(disk: DiskState, request: SetupRequest) -> str | None:
    """Why a command-line request must not join the unfinished run (made from another one)."""
    journal = disk.journal
    if journal is None or journal.finished:
        return None
    differ = differences(journal.selection.request, request)
    if not differ:
        return None
    return (
        f"the setup in progress on this machine ({journal.run_id}) was asked for differently: "
        f"{'; '.join(differ)}. Run it with the same options (or wait until it is done); "
        "gpuwizard never merges two requests"
    )


Next = tuple[Stage, tuple[Effect, ...]]


def _stay(stage: Stage) -> Next:
    return stage, ()


def entered(stage: Stage) -> Next:
    """A stage as a front end comes to it, with what it needs done first: a stage that follows
    the run follows it; the check after a reboot starts."""
    match stage:
        case Installing() | Watching():
            return stage, (Follow(),)
        case Resuming():
            return stage, (Launch(RunMode.CHECK, stage.rebooted),)
    return _stay(stage)


def _exit(stage: Stage, message: str, code: int) -> Next:
    return stage, (Exit(message, code),)


def next_stage(stage: Stage, answer: Answer) -> Next:  # noqa: C901, RET503 - exhaustive: assert_never
    """The stage after an answer, and the effects to carry out on the way."""
    if isinstance(answer, Quit):
        return _exit(stage, "", EXIT_DONE)
    match stage:
        case Looking():
            return _after_looking(stage, answer)
        case ShowingMachine():
            if isinstance(answer, Continue):
                return _stay(Choosing(stage.context))
            if isinstance(answer, Revisit) and stage.set_up is not None:
                return Looking(stage.context.request, then=answer.stage), (Detect(),)
            return _stay(stage)
        case Choosing():
            return _after_choosing(stage, answer)
        case Reviewing():
            return _after_reviewing(stage, answer)
        case Installing():
            return _after_installing(stage, answer)
        case Watching():
            return _after_watching(stage, answer)
        case AwaitingReboot():
            return _after_reboot_asked(stage, answer)
        case AskingReboot():
            if isinstance(answer, RebootAnswered):
                resuming = Resuming(stage.plan, stage.selection, stage.request, answer.rebooted)
                return entered(resuming)
            return _stay(stage)
        case Resuming():
            return _after_resuming(stage, answer)
        case Verifying():
            if isinstance(answer, Continue):
                report = stage.facts.installs.verification
                if report is not None and report.ok:
                    return _stay(
                        Benchmarking(stage.facts, stage.plan, stage.selection, left=stage.left)
                    )
                return _stay(Done(stage.plan, stage.selection, facts=stage.facts, left=stage.left))
            return _stay(stage)
        case Benchmarking():
            return _after_benchmark(stage, answer)
        case Exporting():
            if isinstance(answer, Exported):
                return _stay(
                    Done(
                        stage.plan,
                        stage.selection,
                        stage.bench,
                        answer.paths,
                        stage.facts,
                        stage.left,
                    )
                )
            return _stay(stage)
        case Done():
            if isinstance(answer, Continue):
                return _exit(stage, "", EXIT_DONE)
            return _stay(stage)
        case Refused():
            if isinstance(answer, Back) and stage.back is not None:
                return _stay(stage.back)
            if isinstance(answer, Continue | Back):
                return _exit(stage, f"gpuwizard: {stage.why}", stage.code)
            return _stay(stage)
        case _:
            assert_never(stage)


def _after_looking(stage: Looking, answer: Answer) -> Next:
    if not isinstance(answer, Looked):
        return _stay(stage)
    journal = answer.disk.journal
    if stage.then is not None:
        return _stay(_revisited(stage.then, answer.facts, journal))
    return entered(
        start(
            answer.disk,
            answer.facts,
            stage.request,
            insists=stage.insists,
            rebooted=stage.rebooted,
        )
    )


def _revisited(then: AfterSetup, facts: HostFacts, journal: JournalData | None) -> Stage:
    """A stage of the finished run, on the machine as it is now (no run: verify what is here)."""
    if journal is None or then == "verify":
        plan, selection = (journal.plan, journal.selection) if journal else (None, None)
        return Verifying(facts, plan, selection, journal.left if journal else ())
    if then == "benchmark":
        return Benchmarking(facts, journal.plan, journal.selection, left=journal.left)
    return Exporting(facts, journal.plan, journal.selection, left=journal.left)


def _after_choosing(stage: Choosing, answer: Answer) -> Next:
    match answer:
        case Decided():
            chosen = replace(stage.context, request=answer.request)
            return Choosing(chosen), (MakePlan(chosen),)
        case Planned():
            chosen = replace(stage.context, request=answer.request)
            return _stay(Reviewing(chosen, answer.selection, answer.plan))
        case PlanRefused():
            return _stay(Refused(answer.why, answer.code, back=stage, no_gpu=answer.no_gpu))
        case Back():
            return _stay(ShowingMachine(stage.context))
    return _stay(stage)


def _after_reviewing(stage: Reviewing, answer: Answer) -> Next:
    context = stage.context
    match answer:
        case Approved():
            prepare = Prepare(context.facts, stage.selection, stage.plan, context.seen_run)
            return stage, (prepare,)
        case Prepared():
            return entered(Installing(stage.plan, stage.selection, request=context.request))
        case PrepareRaced():  # another front end's run: show where it stands, replace nothing
            return entered(
                start(answer.disk, context.facts, context.request, insists=context.insists)
            )
        case PrepareBusy():
            return _stay(Refused(answer.why, EXIT_FAILED, back=stage))
        case Back():
            return _stay(Choosing(context))
    return _stay(stage)


def _after_installing(stage: Installing, answer: Answer) -> Next:
    match answer:
        case RunProgressed():
            return _stay(replace(stage, run=answer.view))
        case Launched():
            return _stay(replace(stage, run=answer.view, awaiting=True))
        case RunEnded():
            view = answer.view or stage.run
            if (dying := _dying(answer, view)) is not None:
                return _stay(dying)
            return _run_ended(replace(stage, run=view, awaiting=False), answer.disk)
        case RunStep() | Retry() if stage.mode != "running":
            return _go_on(stage)
        case RunAll() if stage.mode != "running" and not stage.reboot_pending:
            return _launch(replace(stage, auto=True), RunMode.ALL)
        case Skip() if stage.mode != "running":
            return _skip(stage, answer.step)
        case SecretGiven() | CancelStep():
            return stage, _about_the_secret(stage, answer)
        case Aborted() if stage.mode != "running":
            return _exit(stage, ABORTED, EXIT_DONE)
    return _stay(stage)


def _skip(stage: Installing, step: str) -> Next:
    """Leave ``step`` undone; in run all, the rest goes on after it."""
    skipping = replace(stage, skipped=stage.skipped | {step})
    if stage.auto:
        return replace(skipping, awaiting=True), (SkipStep(step), Launch(RunMode.ALL))
    return skipping, (SkipStep(step),)


def _about_the_secret(stage: Installing, answer: SecretGiven | CancelStep) -> tuple[Effect, ...]:
    """The secret the running step waits for: sent, or declined (the step is then stopped)."""
    if isinstance(answer, SecretGiven):
        return (SendSecret(answer.value),)
    return (DeclineSecret(),) if stage.asks is not None else ()


def _launch(stage: Installing, mode: RunMode) -> Next:
    return replace(stage, awaiting=True), (Launch(mode),)


def _go_on(stage: Installing) -> Next:
    """The next step, or (run all) every one; with none left, the runner checks them all again
    and ends the run. With a reboot pending (the person chose "later"): where the disk leads."""
    if stage.reboot_pending:
        return stage, (CheckDisk(),)
    one_step = not stage.auto and bool(stage.pending())
    return _launch(stage, RunMode.STEP if one_step else RunMode.ALL)


def _run_ended(stage: Installing, disk: DiskState) -> Next:
    """Where a run that stopped leads: on to verify it, back to choosing, to the reboot it
    asks for (in this boot), to the check after one; a failure or a pause stays here."""
    journal = disk.journal
    if journal is not None and journal.finished:
        return Looking(stage.request, then="verify"), (Detect(),)
    if disk.stopped is StopReason.CHANGED:
        return Looking(stage.request), (Detect(),)
    # Asked for in this boot (this front end is still here), also where no signal tells.
    if journal is not None and journal.reboot is not None and disk.rebooted is not True:
        step = journal.record(journal.reboot.step)
        reason = step.reason or "a step asked for it"
        return _stay(AwaitingReboot(stage.plan, stage.selection, step.id, reason, stage.request))
    if journal is not None and journal.reboot is not None:  # rebooted under the runner
        return entered(Resuming(stage.plan, stage.selection, stage.request))
    paused = stage.mode == "waiting" and not stage.reboot_pending
    if stage.auto and paused and stage.pending():  # a skip paused it: the rest goes on
        return _launch(stage, RunMode.ALL)
    return _stay(replace(stage, attach=False))  # failed, paused or stopped: still here


def _dying(answer: RunEnded, view: RunView) -> Refused | None:
    """The end of the setup here when runner after runner dies: no more are started, and the
    last one's words say why (exit 1)."""
    ending = view.ending
    if answer.deaths < RUNNER_DEATHS_MAX or not isinstance(ending, Stopped):
        return None
    why = (
        f"the runner died {answer.deaths} times in a row, so gpuwizard starts no more: {ending.why}"
    )
    if "runner.log" not in why:
        why += ". Its output is in runner.log in the state directory"
    return Refused(why, EXIT_FAILED)


def _after_watching(stage: Watching, answer: Answer) -> Next:
    match answer:
        case RunProgressed() | Launched():
            return _stay(replace(stage, run=answer.view))
        case RunEnded():
            return _stay(replace(stage, run=answer.view or stage.run))
        case Freed():
            return Looking(stage.request), (Detect(),)
    return _stay(stage)


def _after_resuming(stage: Resuming, answer: Answer) -> Next:
    match answer:
        case RunProgressed() | Launched():
            return _stay(replace(stage, run=answer.view))
        case RunEnded():
            view = answer.view or stage.run
            return _stay(_dying(answer, view) or replace(stage, run=view, checked=True))
        case Continue() if stage.checked:  # an answer given up front is used once
            return Looking(stage.request), (Detect(),)
    return _stay(stage)


REBOOT_MISSED = "the reboot did not happen (the boot_id is unchanged)"


def _reboot_asked(journal: JournalData, stage: Installing) -> AwaitingReboot:
    """The reboot the journal records (its boot_id unchanged), with why it is still needed."""
    assert journal.reboot is not None
    record = journal.record(journal.reboot.step)
    reason = record.reason or "a step asked for it"
    if journal.reboot.commanded_at is not None:
        reason = f"{REBOOT_MISSED}; {reason}"
    return AwaitingReboot(stage.plan, stage.selection, record.id, reason, stage.request)


def _after_reboot_asked(stage: AwaitingReboot, answer: Answer) -> Next:
    match answer:
        case RebootNow():
            return stage, (Reboot(),)
        case Rebooted() if answer.failed is not None:
            return _stay(Refused(answer.failed, EXIT_FAILED, back=stage))
        case Rebooted() if answer.back:
            return Looking(stage.request), (Detect(),)
        case Rebooted():
            return _exit(stage, REBOOTING, EXIT_REBOOT)
        case RebootLater():  # back to the install, where the reboot waits (Enter shows it again)
            return entered(Installing(stage.plan, stage.selection, request=stage.request))
    return _stay(stage)


def _after_benchmark(stage: Benchmarking, answer: Answer) -> Next:
    if isinstance(answer, Again):
        return _stay(replace(stage, attempt=stage.attempt + 1))
    if not isinstance(answer, Benchmarked):
        return _stay(stage)
    if stage.plan is None or stage.selection is None:
        done = Done(
            stage.plan, stage.selection, answer.headline, facts=stage.facts, left=stage.left
        )
        return _stay(done)
    return _stay(Exporting(stage.facts, stage.plan, stage.selection, answer.headline, stage.left))
