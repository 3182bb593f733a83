"""The one impure piece of the core: carries out the state machine's effects on a machine, and
gives the install screens and ``apply`` their handle on the detached runner.

Every call is quick or blocking on I/O only (detection, a file lock, a process start); the
runner does the work in its own process. Front ends call ``carry_out`` for each effect the flow
asks for and feed the answer back to ``next_stage``; they never plan, prepare or launch alone.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path

from gpuwizard.core.facts import BootMark, FreeSpace, HostFacts
from gpuwizard.machine.detect import detect_host
from gpuwizard.machine.detect.platform import read_boot_mark
from gpuwizard.machine.detect.system import read_free_space
from gpuwizard.recommend.table import CompatTable, load_table
from gpuwizard.runner import events as ev
from gpuwizard.runner.control import (
    Backend,
    StartBusy,
    launch,
    prepare_run,
    request_skip,
    starting,
    wait_until_started,
)
from gpuwizard.runner.events import StopReason
from gpuwizard.runner.follow import EventFollower
from gpuwizard.runner.layout import EVENTS
from gpuwizard.runner.lock import AlreadyRunning, read_run_record, runner_status
from gpuwizard.runner.secrets import send_secret
from gpuwizard.runner.view import Stopped, view_of
from gpuwizard.setup.disk import DiskState, read_disk
from gpuwizard.setup.flow import (
    Answer,
    Detect,
    Effect,
    Exit,
    Looked,
    MakePlan,
    Prepare,
    PrepareBusy,
    Prepared,
    PrepareRaced,
    Reboot,
    Rebooted,
)
from gpuwizard.setup.lease import Lease
from gpuwizard.setup.plan import Replay, plan_request

POLL_S = 0.1


class RunEvents:
    """One reader's place in a run's events.jsonl."""

    def __init__(self, follower: EventFollower) -> None:
        self.follower = follower

    def poll(self) -> list[ev.Envelope]:
        """The events not seen yet; a replaced file is replayed from its start."""
        return [item for item in self.follower.poll() if isinstance(item, ev.Envelope)]


class SetupDriver:
    """One machine (real or simulated) as the core drives it."""

    def __init__(
        self,
        backend: Backend,
        replay: Replay | None = None,
        *,
        command: str = "gpuwizard",
        drive: bool = True,
        front_end: str = "tui",
    ) -> None:
        """``command``: how the person started this front end (told to a second one);
        ``drive``: take the lease to drive the setup (a dry run only looks);
        ``front_end``: "tui" or "apply", recorded with a person's answer in the journal."""
        self.backend = backend
        self.replay = replay
        self.command = command
        self.drive = drive
        self.front_end = front_end
        self.lease = Lease(backend.state_dir)

    @functools.cached_property
    def table(self) -> CompatTable:
        return load_table()

    # ------------------------------------------------------------------------------ effects
    def carry_out(self, effect: Effect) -> Answer | None:
        """Do what the flow asked; the answer to feed back (None for Exit, which ends it)."""
        match effect:
            case Detect():
                facts = self.facts()
                return Looked(facts, self.disk(facts.boot.mark, claim=self.drive))
            case MakePlan():
                context = effect.context
                return plan_request(self.table, context.facts, context.request, self.replay)
            case Prepare():
                return self.prepare(effect)
            case Reboot():
                return self.reboot()
            case Exit():
                return None

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
        events = self.events()
        if not self.start(one_step=False, reboot_now=True):
            return Rebooted(back=False, failed="the runner did not start; see runner.log")
        view = view_of(events.poll())
        while self.running():
            time.sleep(POLL_S)
            view = view_of(events.poll(), start=view)
        view = view_of(events.poll(), start=view)
        ending = view.ending
        if isinstance(ending, Stopped) and ending.reason is not StopReason.REBOOT:
            return Rebooted(back=False, failed=ending.why)
        return Rebooted(back=self.backend.simulated)

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
        """Another front end still drives the setup (a watching view asks this)."""
        return self.lease.other() is not None

    def close(self) -> None:
        """This front end is done: another may drive."""
        self.lease.release()

    # ---------------------------------------------------------------------------- the runner
    def start(
        self,
        one_step: bool,
        check_only: bool = False,
        reboot_now: bool = False,
        *,
        rebooted: bool | None = None,
    ) -> bool:
        """Launch the runner for the next step, all of them, the check after a reboot, or the
        reboot itself; False when it did not come up (its output is in runner.log).
        ``rebooted``: the person's answer to "did it restart?", where no boot signal tells."""
        flags = (
            ["--reboot-now"]
            if reboot_now
            else ["--check-only"]
            if check_only
            else ["--one-step"]
            if one_step
            else []
        )
        if rebooted is not None:
            flags += ["--rebooted", "yes" if rebooted else "no", "--answered-by", self.front_end]
        command = [*self.backend.runner, *flags]
        with starting(self.backend.state_dir):  # one front end at a time starts a runner (T11)
            previous = read_run_record(self.backend.state_dir)
            process = launch(
                command,
                self.backend.state_dir,
                env=self.backend.env,
                systemd=False if self.backend.simulated else None,
            )
            return wait_until_started(self.backend.state_dir, process, previous)

    def running(self) -> bool:
        return runner_status(self.backend.state_dir, self.boot()) == "running"

    def events(self) -> RunEvents:
        """The run's events for one reader: its whole history first, then what is new."""
        return RunEvents(EventFollower(self.backend.state_dir / EVENTS))

    def free_space(self) -> tuple[FreeSpace, ...]:
        return read_free_space(self.backend.host())

    def skip(self, step_id: str) -> None:
        request_skip(self.backend.state_dir, step_id)

    def send_secret(self, value: str) -> None:
        send_secret(self.backend.state_dir, value)

    @property
    def logs_hint(self) -> str:
        return str(self.backend.state_dir / "logs")

    @property
    def state_dir(self) -> Path:
        return self.backend.state_dir
