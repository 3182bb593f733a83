"""The wizard's one state machine, for the TUI and ``gpuwizard apply`` alike. Pure.

``start(disk, facts, request)`` is the only relaunch rule: what is on disk (the runner, the
journal, the boot) says where a front end begins, so every launch of either lands on the same
stage. ``next_stage(stage, answer)`` is the only transition rule: a person's answer (or an
effect's result) leads to the next stage and the effects a driver must carry out. Front ends
show stages and turn what happens into answers; they decide nothing about where to go.

The reboot screen can only come from the journal: a reboot it records with a boot id that has
not changed (``start``, and ``RunEnded`` re-reading the disk). No replayed event leads there.
Where no boot signal can judge a recorded reboot, the person is asked whether the machine
restarted (``AskingReboot``), or answered up front (``apply --rebooted``): the answer goes to the
runner's check, which keeps it in the journal. An answer where a signal can judge is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime

from gpuwizard.core.facts import HostFacts, judge_boot
from gpuwizard.core.plan import Plan, assert_never
from gpuwizard.core.request import SetupRequest, differences
from gpuwizard.core.selection import Selection
from gpuwizard.runner.journal import JournalData
from gpuwizard.setup.disk import DiskState
from gpuwizard.setup.lease import Holder

EXIT_DONE, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_UNSUPPORTED, EXIT_REBOOT = 0, 1, 2, 3, 10


# ------------------------------------------------------------------------------------- stages
@dataclass(frozen=True)
class Context:
    """What every stage before the run knows: the machine, the wish, the run seen on disk."""

    facts: HostFacts
    request: SetupRequest = field(default_factory=SetupRequest)
    seen_run: str | None = None
    """The run id on disk when the machine was looked at: a run started since then by another
    front end is not replaced (T11)."""
    insists: bool = False
    """The wishes were given on the command line (``apply``): a run in progress made from
    other wishes is refused rather than followed. A person choosing in the TUI decides after
    seeing the run."""


@dataclass(frozen=True)
class Looking:
    """Looking at the machine (and the disk); ``then_verify`` after a run finished."""

    request: SetupRequest = field(default_factory=SetupRequest)
    then_verify: bool = False
    insists: bool = False
    """As ``Context.insists``: for the first look of ``apply``."""
    rebooted: bool | None = None
    """``apply --rebooted yes|no``: the answer to "did this machine restart?" given up front,
    for a reboot no boot signal can judge. Used once, never saved."""


@dataclass(frozen=True)
class Showing:
    """The machine at a glance."""

    context: Context


@dataclass(frozen=True)
class Choosing:
    context: Context
    note: str | None = None
    """Why the person is asked again (the host changed under the last run)."""


@dataclass(frozen=True)
class Reviewing:
    context: Context
    selection: Selection
    plan: Plan


@dataclass(frozen=True)
class Installing:
    plan: Plan
    selection: Selection
    attach: bool = False
    """A runner is at work already (another terminal, an SSH drop): follow it."""
    request: SetupRequest = field(default_factory=SetupRequest)


@dataclass(frozen=True)
class Watching:
    """Another front end drives the setup: its run is shown, nothing is decided here."""

    plan: Plan
    selection: Selection
    holder: Holder
    request: SetupRequest = field(default_factory=SetupRequest)


@dataclass(frozen=True)
class AwaitingReboot:
    plan: Plan
    selection: Selection
    step: str
    reason: str
    request: SetupRequest = field(default_factory=SetupRequest)


@dataclass(frozen=True)
class AskingReboot:
    """A reboot was asked for and neither the boot_id nor /proc/stat's btime can tell whether it
    happened: the person is asked "Did this machine restart since <since>?"."""

    plan: Plan
    selection: Selection
    step: str
    since: str
    """When the reboot was asked for, for people (``when``)."""
    request: SetupRequest = field(default_factory=SetupRequest)


@dataclass(frozen=True)
class Resuming:
    """After the reboot: the check of what waited for it runs, then its findings show."""

    plan: Plan
    selection: Selection
    request: SetupRequest = field(default_factory=SetupRequest)
    rebooted: bool | None = None
    """The person's answer to "did it restart?" (AskingReboot), passed to the check; None where
    a boot signal judges."""


@dataclass(frozen=True)
class Verifying:
    facts: HostFacts
    plan: Plan | None
    selection: Selection | None


@dataclass(frozen=True)
class Benchmarking:
    facts: HostFacts
    plan: Plan | None
    selection: Selection | None
    attempt: int = 0
    """Each run of the benchmark is a stage of its own (a fresh session)."""


@dataclass(frozen=True)
class Exporting:
    facts: HostFacts
    plan: Plan
    selection: Selection
    bench: str | None = None
    """The benchmark's headline and results file, when one ran."""


@dataclass(frozen=True)
class Done:
    plan: Plan | None
    selection: Selection | None
    bench: str | None = None
    exports: tuple[str, ...] = ()
    facts: HostFacts | None = None
    """The machine as verified at the end: what was installed, to show beside what was planned."""


@dataclass(frozen=True)
class Refused:
    why: str
    code: int
    back: Stage | None = None
    """Where Back leads (a choice to change); None: the only way is out."""
    no_gpu: bool = False
    """Refused because the machine has no NVIDIA GPU at all."""


Stage = (
    Looking
    | Showing
    | Choosing
    | Reviewing
    | Installing
    | Watching
    | AwaitingReboot
    | AskingReboot
    | Resuming
    | Verifying
    | Benchmarking
    | Exporting
    | Done
    | Refused
)


def label(stage: Stage) -> str:  # noqa: C901, RET503 - one name per stage: assert_never
    """The stage's name for people: the TUI's title says it, ``apply`` says where it picks up.
    One word or two: beside "SIMULATION: <profile> (no GPU here)" it must fit 80 columns."""
    match stage:
        case Looking():
            return "Looking"
        case Showing():
            return "Machine"
        case Choosing():
            return "Choose"
        case Reviewing():
            return "Review"
        case Installing():
            return "Install"
        case Watching():
            return "Watching"
        case AwaitingReboot():
            return "Reboot"
        case AskingReboot():
            return "Restarted?"
        case Resuming():
            return "Resume"
        case Verifying():
            return "Verify"
        case Benchmarking():
            return "Benchmark"
        case Exporting():
            return "Export"
        case Done():
            return "Done"
        case Refused():
            return "Stopped"
        case _:
            assert_never(stage)


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
class RunEnded:
    """The runner stopped (done, reboot, failed, paused...): the disk as it left it."""

    disk: DiskState


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
    | Benchmarked
    | Exported
)


# ------------------------------------------------------------------------------------ effects
@dataclass(frozen=True)
class Detect:
    """Look at the machine and the disk; answers Looked."""


@dataclass(frozen=True)
class MakePlan:
    """Recommend and plan for the request; answers Planned or PlanRefused."""

    context: Context


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


Effect = Detect | MakePlan | Prepare | Reboot | Exit

ABORTED = "Install aborted. Finished steps stay done; run gpuwizard again to continue."
REBOOTING = "The machine is rebooting. Log in again and run gpuwizard to continue."
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
        return Showing(context)
    if disk.runner == "running":
        return Installing(journal.plan, journal.selection, attach=True, request=request)
    if journal.finished:
        return Showing(context)
    if disk.outcome == "changed":
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


def _exit(stage: Stage, message: str, code: int) -> Next:
    return stage, (Exit(message, code),)


def next_stage(stage: Stage, answer: Answer) -> Next:  # noqa: C901, RET503 - exhaustive: assert_never
    """The stage after an answer, and the effects to carry out on the way."""
    if isinstance(answer, Quit):
        return _exit(stage, "", EXIT_DONE)
    match stage:
        case Looking():
            return _after_looking(stage, answer)
        case Showing():
            if isinstance(answer, Continue):
                return _stay(Choosing(stage.context))
            return _stay(stage)
        case Choosing():
            return _after_choosing(stage, answer)
        case Reviewing():
            return _after_reviewing(stage, answer)
        case Installing():
            return _after_installing(stage, answer)
        case Watching():
            if isinstance(answer, Freed):
                return Looking(stage.request), (Detect(),)
            return _stay(stage)
        case AwaitingReboot():
            return _after_reboot_asked(stage, answer)
        case AskingReboot():
            if isinstance(answer, RebootAnswered):
                return _stay(Resuming(stage.plan, stage.selection, stage.request, answer.rebooted))
            return _stay(stage)
        case Resuming():
            if isinstance(answer, Continue):  # an answer given up front is used once
                return Looking(stage.request), (Detect(),)
            return _stay(stage)
        case Verifying():
            if isinstance(answer, Continue):
                report = stage.facts.installs.verification
                if report is not None and report.ok:
                    return _stay(Benchmarking(stage.facts, stage.plan, stage.selection))
                return _stay(Done(stage.plan, stage.selection, facts=stage.facts))
            return _stay(stage)
        case Benchmarking():
            return _after_benchmark(stage, answer)
        case Exporting():
            if isinstance(answer, Exported):
                return _stay(
                    Done(stage.plan, stage.selection, stage.bench, answer.paths, stage.facts)
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
    if stage.then_verify:
        plan, selection = (journal.plan, journal.selection) if journal else (None, None)
        return _stay(Verifying(answer.facts, plan, selection))
    return _stay(
        start(
            answer.disk,
            answer.facts,
            stage.request,
            insists=stage.insists,
            rebooted=stage.rebooted,
        )
    )


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
            return _stay(Showing(stage.context))
    return _stay(stage)


def _after_reviewing(stage: Reviewing, answer: Answer) -> Next:
    context = stage.context
    match answer:
        case Approved():
            prepare = Prepare(context.facts, stage.selection, stage.plan, context.seen_run)
            return stage, (prepare,)
        case Prepared():
            return _stay(Installing(stage.plan, stage.selection, request=context.request))
        case PrepareRaced():  # another front end's run: show where it stands, replace nothing
            return _stay(
                start(answer.disk, context.facts, context.request, insists=context.insists)
            )
        case PrepareBusy():
            return _stay(Refused(answer.why, EXIT_FAILED, back=stage))
        case Back():
            return _stay(Choosing(context))
    return _stay(stage)


def _after_installing(stage: Installing, answer: Answer) -> Next:
    match answer:
        case RunEnded():
            disk = answer.disk
            journal = disk.journal
            if journal is not None and journal.finished:
                return Looking(stage.request, then_verify=True), (Detect(),)
            if disk.outcome == "changed":
                return Looking(stage.request), (Detect(),)
            # Asked for in this boot (this front end is still here), also where no signal tells.
            if journal is not None and journal.reboot is not None and disk.rebooted is not True:
                step = journal.record(journal.reboot.step)
                reason = step.reason or "a step asked for it"
                return _stay(
                    AwaitingReboot(stage.plan, stage.selection, step.id, reason, stage.request)
                )
            if journal is not None and journal.reboot is not None:  # rebooted under the runner
                return _stay(Resuming(stage.plan, stage.selection, stage.request))
            return _stay(replace(stage, attach=False))  # failed, paused or stopped: still here
        case Aborted():
            return _exit(stage, ABORTED, EXIT_DONE)
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
            return _stay(Installing(stage.plan, stage.selection, request=stage.request))
    return _stay(stage)


def _after_benchmark(stage: Benchmarking, answer: Answer) -> Next:
    if isinstance(answer, Again):
        return _stay(replace(stage, attempt=stage.attempt + 1))
    if not isinstance(answer, Benchmarked):
        return _stay(stage)
    if stage.plan is None or stage.selection is None:
        return _stay(Done(stage.plan, stage.selection, answer.headline, facts=stage.facts))
    return _stay(Exporting(stage.facts, stage.plan, stage.selection, answer.headline))
