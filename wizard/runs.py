"""The TUI's handle on a run: start the detached runner, follow its events, steer it.

Screens never touch processes; they get a ``RunHandle`` (through the ``RunControl`` protocol in
gpuwizard.screens.capabilities) and call intents on it: start, skip, send a secret, reboot.
Every call here is quick; the runner does the work in its own process.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuwizard.detect import detect_host
from gpuwizard.detect.platform import parse_boot_id
from gpuwizard.facts import HostFacts
from gpuwizard.plan import Plan
from gpuwizard.runner import events as ev
from gpuwizard.runner.control import (
    Backend,
    current,
    launch,
    prepare_run,
    request_skip,
    starting,
    wait_until_started,
)
from gpuwizard.runner.follow import EventFollower
from gpuwizard.runner.layout import EVENTS
from gpuwizard.runner.lock import AlreadyRunning, read_run_record, runner_status
from gpuwizard.runner.secrets import send_secret
from gpuwizard.selection import Selection


@dataclass
class RunHandle:
    backend: Backend
    follower: EventFollower = field(init=False)

    def __post_init__(self) -> None:
        self.follower = EventFollower(self.backend.state_dir / EVENTS)

    def facts(self) -> HostFacts:
        return detect_host(self.backend.host())

    def prepare(self, plan: Plan, selection: Selection, facts: HostFacts) -> bool:
        """Make the reviewed plan the run; False when another front end's runner got there first
        (then nothing is replaced, and the screen attaches to that run instead).

        Raises:
            StartBusy: another front end has held the start lock for a minute.
        """
        with starting(self.backend.state_dir):
            if self.running():
                return False
            try:
                prepare_run(self.backend.state_dir, plan, selection, facts)
            except AlreadyRunning:
                return False
        self.follower = EventFollower(self.backend.state_dir / EVENTS)
        return True

    def start(self, one_step: bool, check_only: bool = False) -> bool:
        """Launch the runner for the next step (or all); False when it did not come up."""
        flags = ["--check-only"] if check_only else ["--one-step"] if one_step else []
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

    def boot_id(self) -> str | None:
        """This boot's id, read alone: cheap enough to ask several times a second."""
        return parse_boot_id(self.backend.host().read_text("/proc/sys/kernel/random/boot_id"))

    def running(self) -> bool:
        return runner_status(self.backend.state_dir, self.boot_id()) == "running"

    def poll(self) -> list[ev.RunEvent]:
        return [item.event for item in self.follower.poll() if isinstance(item, ev.Envelope)]

    def skip(self, step_id: str) -> None:
        request_skip(self.backend.state_dir, step_id)

    def send_secret(self, value: str) -> None:
        send_secret(self.backend.state_dir, value)

    def reboot(self) -> None:
        self.backend.reboot()

    def journal_steps(self) -> list[tuple[str, str, str]]:
        """(step id, state, reason) from the journal, for resuming screens."""
        state = current(self.backend.state_dir, None)
        if state.journal is None:
            return []
        return [(r.id, r.state, r.reason) for r in state.journal.data.steps]

    @property
    def logs_hint(self) -> str:
        return str(self.backend.state_dir / "logs")
