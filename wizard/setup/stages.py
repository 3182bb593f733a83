"""The wizard's stages: where a front end is in the setup, and everything it shows there. Pure.

A stage is a value: the state machine (wizard/setup/flow.py) goes from one to the next, and a
front end shows the one it is at (the TUI's views render it; ``apply`` prints and answers it).
The stages that follow a run (``Installing``, ``Watching``, ``Resuming``) hold the run as its
events fold (``RunView``): the TUI renders that, so what a relaunch shows is what watching live
showed. Each stage's name for people is ``label``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.plan import Plan, StepPlan, assert_never
from gpuwizard.core.request import SetupRequest
from gpuwizard.core.selection import Selection
from gpuwizard.runner import events as ev
from gpuwizard.runner.events import StopReason
from gpuwizard.runner.view import RebootAsked, RunView, StepStatus, Stopped
from gpuwizard.setup.lease import Holder

AfterSetup = Literal["verify", "benchmark", "export"]
"""What a person may do again with a machine gpuwizard has set up."""
Mode = Literal["waiting", "running", "failed"]
"""What an install's keys can do: start a step, nothing (one runs), or retry or skip one."""
StepState = StepStatus | Literal["next"]


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
    """Looking at the machine (and the disk); ``then``: on to that stage of the finished run
    (verify, as a run finishes; any of them, as the person asks on the machine view)."""

    request: SetupRequest = field(default_factory=SetupRequest)
    then: AfterSetup | None = None
    insists: bool = False
    """As ``Context.insists``: for the first look of ``apply``."""
    rebooted: bool | None = None
    """``apply --rebooted yes|no``: the answer to "did this machine restart?" given up front,
    for a reboot no boot signal can judge. Used once, never saved."""


@dataclass(frozen=True)
class SetUp:
    """The run that finished setting this machine up, as the machine view names it."""

    run_id: str
    finished_at: str
    """When its journal was last saved (ISO time)."""
    left: tuple[str, ...] = ()
    """The titles of the steps the person skipped in it."""


@dataclass(frozen=True)
class ShowingMachine:
    """The machine at a glance; with ``set_up``, gpuwizard's finished run on it, which can be
    verified, benchmarked or exported again (a relaunch after the install lands here)."""

    context: Context
    set_up: SetUp | None = None


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
    """The plan's steps, run one at a time or all at once, as the run's events fold."""

    plan: Plan
    selection: Selection
    attach: bool = False
    """A runner was at work already when this front end came (another terminal, an SSH drop)."""
    request: SetupRequest = field(default_factory=SetupRequest)
    run: RunView = field(default_factory=RunView)
    """The run as its events fold, history first."""
    awaiting: bool = False
    """A runner this front end launched, or found at work, has not been seen to end: the run's
    last events may be in while its process is still finishing."""
    auto: bool = False
    """Every step at once (run all, ``apply``): after a pause the next step starts by itself."""
    skipped: frozenset[str] = frozenset()
    """Steps the person skipped here; the runner marks them when it next runs."""

    @property
    def mode(self) -> Mode:
        if self.awaiting:
            return "running"
        ending = self.run.ending
        if isinstance(ending, Stopped) and ending.reason is not StopReason.PAUSED:
            return "failed"
        return "waiting"

    @property
    def asks(self) -> ev.PromptShown | None:
        """The secret the running step waits for the person to give (the MOK password)."""
        prompt = self.run.prompt
        if self.mode == "running" and prompt is not None and prompt.secret:
            return prompt
        return None

    @property
    def reboot_pending(self) -> bool:
        """The run stopped for a reboot that has not happened (the person chose "later")."""
        return self.mode == "waiting" and isinstance(self.run.ending, RebootAsked)

    def state_of(self, step: StepPlan) -> StepStatus:
        if step.id in self.skipped:
            return "left"
        status = self.run.status(step.id)
        return "skipped" if status == "pending" and step.satisfied else status

    def pending(self) -> list[StepPlan]:
        """The steps still to run (a failed one among them)."""
        return [s for s in self.plan.steps if self.state_of(s) in ("pending", "failed")]

    @property
    def current(self) -> StepPlan | None:
        """The step this stage is about: the next to run while waiting, else the one running
        (or the last that ran)."""
        if self.mode == "waiting":
            remaining = self.pending()
            return remaining[0] if remaining else None
        return next((s for s in self.plan.steps if s.id == self.run.current), None)

    def shown_state(self, step: StepPlan) -> StepState:
        """A step's state as the step list shows it: the one to run next is marked so."""
        current = self.current
        if self.mode == "waiting" and current is not None and step.id == current.id:
            return "next"
        return self.state_of(step)


@dataclass(frozen=True)
class Watching:
    """Another front end drives the setup: its run is shown, nothing is decided here."""

    plan: Plan
    selection: Selection
    holder: Holder
    request: SetupRequest = field(default_factory=SetupRequest)
    run: RunView = field(default_factory=RunView)


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
    run: RunView = field(default_factory=RunView)
    checked: bool = False
    """The check ran to its end: ``run`` says what it verified."""

    @property
    def problem(self) -> str | None:
        """Why the check stopped, when it did not end as it should (paused)."""
        ending = self.run.ending
        if isinstance(ending, Stopped) and ending.reason is not StopReason.PAUSED:
            return ending.why
        return None


@dataclass(frozen=True)
class Verifying:
    facts: HostFacts
    plan: Plan | None
    selection: Selection | None
    left: tuple[str, ...] = ()
    """The titles of the steps the person skipped: the setup is incomplete, and says so."""


@dataclass(frozen=True)
class Benchmarking:
    facts: HostFacts
    plan: Plan | None
    selection: Selection | None
    attempt: int = 0
    """Each run of the benchmark is a stage of its own (a fresh session)."""
    left: tuple[str, ...] = ()
    """The titles of the steps the person skipped: the setup is incomplete, and says so."""


@dataclass(frozen=True)
class Exporting:
    facts: HostFacts
    plan: Plan
    selection: Selection
    bench: str | None = None
    """The benchmark's headline and results file, when one ran."""
    left: tuple[str, ...] = ()
    """The titles of the steps the person skipped: the setup is incomplete, and says so."""


@dataclass(frozen=True)
class Done:
    plan: Plan | None
    selection: Selection | None
    bench: str | None = None
    exports: tuple[str, ...] = ()
    facts: HostFacts | None = None
    """The machine as verified at the end: what was installed, to show beside what was planned."""
    left: tuple[str, ...] = ()
    """The titles of the steps the person skipped: the setup is incomplete, and says so."""


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
    | ShowingMachine
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
Following = Installing | Watching | Resuming
"""The stages that follow the run: its events reach them as they are written."""


def label(stage: Stage) -> str:  # noqa: C901, RET503 - one name per stage: assert_never
    """The stage's name for people: the TUI's title says it, ``apply`` says where it picks up.
    One word or two: beside "SIMULATION: <profile> (no GPU here)" it must fit 80 columns."""
    match stage:
        case Looking():
            return "Looking"
        case ShowingMachine():
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
