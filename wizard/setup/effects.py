"""The one impure piece of the core: it carries out the state machine's effects on a machine.

Every effect is quick or blocks on I/O only (detection, a file lock, a process start); the runner
does the work in its own process, launched and followed through its ``RunFollower``
(wizard/setup/runs.py). The one loop (wizard/setup/conduct.py) hands it each effect the flow asks
for and feeds the answer back to ``next_stage``; front ends never plan, prepare or launch alone.
"""

from __future__ import annotations

import contextlib
import functools
import time
from pathlib import Path

from gpuwizard.core.facts import BootMark, FreeSpace, HostFacts
from gpuwizard.machine.detect import detect_host
from gpuwizard.machine.detect.platform import read_boot_mark
from gpuwizard.machine.detect.system import read_free_space
from gpuwizard.recommend.table import CompatTable, load_table
from gpuwizard.runner.control import Backend, StartBusy, prepare_run, starting
from gpuwizard.runner.events import StopReason
from gpuwizard.runner.lock import AlreadyRunning
from gpuwizard.runner.secrets import decline_secret, send_secret
from gpuwizard.runner.view import Stopped
from gpuwizard.setup.disk import DiskState, read_disk
from gpuwizard.setup.flow import (
    Answer,
    CheckDisk,
    DeclineSecret,
    Detect,
    Effect,
    Exit,
    Follow,
    Launch,
    Launched,
    Looked,
    MakePlan,
    Prepare,
    PrepareBusy,
    Prepared,
    PrepareRaced,
    Reboot,
    Rebooted,
    RunEnded,
    RunMode,
    RunProgressed,
    SendSecret,
    SkipStep,
)
from gpuwizard.setup.lease import Lease
from gpuwizard.setup.plan import Replay, plan_request
from gpuwizard.setup.runs import RunFollower

POLL_S = 0.05
GONE_WITH_THE_MACHINE = frozenset({StopReason.REBOOT, StopReason.CRASHED})


class Effects:
    """One machine (real or simulated) as the core drives it."""

    def __init__(
        self,
        backend: Backend,
        replay: Replay | None = None,
        *,
        command: str = "gpuwizard",
        drive: bool = True,
        front_end: str = "tui",
        back_after_reboot: bool = True,
    ) -> None:
        """``command``: how the person started this front end (told to a second one);
        ``drive``: take the lease to drive the setup (a dry run only looks);
        ``front_end``: "tui" or "apply", recorded with a person's answer in the journal;
        ``back_after_reboot``: a simulated machine is back at once and this front end goes on
        (``apply`` stops instead, as a real reboot stops it, so its runs are a person's)."""
        self.back_after_reboot = back_after_reboot
        self.backend = backend
        self.replay = replay
        self.command = command
        self.drive = drive
        self.lease = Lease(backend.state_dir)
        self.runs = RunFollower(backend, front_end)

    @functools.cached_property
    def table(self) -> CompatTable:
        return load_table()

    # ------------------------------------------------------------------------------ effects
    def carry_out(self, effect: Effect) -> Answer | None:  # noqa: C901 - one case per effect
        """Do what the flow asked; the answer to feed back (None: there is none to give now)."""
        match effect:
            case Detect():
                facts = self.facts()
                return Looked(facts, self.disk(facts.boot.mark, claim=self.drive))
            case MakePlan():
                context = effect.context
                return plan_request(self.table, context.facts, context.request, self.replay)
            case Prepare():
                return self.prepare(effect)
            case Follow():
                _, news = self.runs.catch_up()
                if self.runs.attach():  # a runner at work: as if launched here
                    return Launched(self.runs.view, news)
                return RunProgressed(self.runs.view)
            case Launch():
                self.runs.launch(effect.mode, effect.rebooted)
                return Launched(self.runs.view)
            case SkipStep():
                return RunProgressed(self.runs.skip(effect.step))
            case SendSecret() | DeclineSecret():
                self.answer_question(effect)
                return None
            case CheckDisk():
                return RunEnded(self.disk())
            case Reboot():
                return self.reboot()
            case Exit():
                return None

    def answer_question(self, effect: SendSecret | DeclineSecret) -> None:
        """The person's answer to the question the runner asked: sent, or declined. A question
        answered meanwhile (its socket gone: the step moved on, or ended) needs nothing more."""
        state_dir = self.backend.state_dir
        with contextlib.suppress(OSError):
            if isinstance(effect, SendSecret):
                send_secret(state_dir, effect.value)
            else:
                decline_secret(state_dir)

    def prepare(self, effect: Prepare) -> Answer:
        """Make the reviewed plan the run, unless another front end got there first (T11)."""
        state_dir = self.backend.state_dir
        try:
            with starting(state_dir):
                disk = self.disk(effect.facts.boot.mark)
                if disk.runner == "running" or disk.run_id != effect.seen_run:
                    return PrepareRaced(disk)
                try:
                    prepare_run(state_dir, effect.plan, effect.selection, effect.facts)
                except AlreadyRunning:
                    return PrepareRaced(self.disk(effect.facts.boot.mark))
        except StartBusy as error:
            return PrepareBusy(str(error))
        return Prepared()

    def reboot(self) -> Rebooted:
        """The runner carries out the reboot the journal waits for (its command, logged like every
        other); a real machine takes this process down with it, a simulated one is back at once."""
        self.runs.launch(RunMode.REBOOT)
        while (progress := self.runs.look()) is None or not progress.ended:
            if progress is None:
                time.sleep(POLL_S)
        ending = self.runs.view.ending
        self.runs.deaths = 0  # the reboot takes its runner down: no death of the kind that repeats
        # Gone without a last word is what a reboot does to it; anything it said is its answer.
        if isinstance(ending, Stopped) and ending.reason not in GONE_WITH_THE_MACHINE:
            return Rebooted(back=False, failed=ending.why)
        return Rebooted(back=self.backend.simulated and self.back_after_reboot)

    # ---------------------------------------------------------------------------- the machine
    def facts(self) -> HostFacts:
        return detect_host(self.backend.host())

    def boot(self) -> BootMark:
        """This boot's id and start time, read alone: cheap enough to ask several times a second."""
        return read_boot_mark(self.backend.host())

    def disk(self, boot: BootMark | None = None, claim: bool = False) -> DiskState:
        """The disk as it is; ``claim`` takes the lease to drive, when no other front end has it."""
        other = self.lease.claim(self.command) if claim else self.lease.other()
        return read_disk(self.backend.state_dir, boot or self.boot(), other)

    def driven_elsewhere(self) -> bool:
        """Another front end still drives the setup (a watching front end asks this)."""
        return self.lease.other() is not None

    def close(self) -> None:
        """This front end is done: another may drive."""
        self.lease.release()

    def free_space(self) -> tuple[FreeSpace, ...]:
        return read_free_space(self.backend.host())

    @property
    def logs_hint(self) -> str:
        return str(self.backend.state_dir / "logs")

    @property
    def state_dir(self) -> Path:
        return self.backend.state_dir
