"""The TUI's handle on a run: start the detached runner, follow its events, steer it.

Screens never touch processes; they get a ``RunHandle`` (through the ``RunControl`` protocol in
gpuwizard.screens.capabilities) and call intents on it: start, skip, send a secret, reboot.
Every call here is quick; the runner does the work in its own process.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuwizard.detect import detect_host
from gpuwizard.facts import HostFacts
from gpuwizard.plan import Plan
from gpuwizard.runner import events as ev
from gpuwizard.runner.control import (
    Backend,
    current,
    launch,
    prepare_run,
    request_skip,
    wait_until_started,
)
from gpuwizard.runner.follow import EventFollower
from gpuwizard.runner.lock import read_run_record, runner_status
from gpuwizard.runner.secrets import send_secret
from gpuwizard.runner.session import EVENTS
from gpuwizard.selection import Selection


@dataclass
class RunHandle:
    backend: Backend
    follower: EventFollower = field(init=False)

    def __post_init__(self) -> None:
        self.follower = EventFollower(self.backend.state_dir / EVENTS)

    def facts(self) -> HostFacts:
        return detect_host(self.backend.host())

    def prepare(self, plan: Plan, selection: Selection, facts: HostFacts) -> None:
        prepare_run(self.backend.state_dir, plan, selection, facts)
        self.follower = EventFollower(self.backend.state_dir / EVENTS)

    def start(self, one_step: bool, check_only: bool = False) -> bool:
        """Launch the runner for the next step (or all); False when it did not come up."""
        previous = read_run_record(self.backend.state_dir)
        flags = ["--check-only"] if check_only else ["--one-step"] if one_step else []
        command = [*self.backend.runner, *flags]
        process = launch(
            command,
            self.backend.state_dir,
            env=self.backend.env,
            systemd=False if self.backend.simulated else None,
        )
        return wait_until_started(self.backend.state_dir, process, previous)

    def running(self) -> bool:
        boot_id = self.facts().boot.boot_id
        return runner_status(self.backend.state_dir, boot_id) == "running"

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
