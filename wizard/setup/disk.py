"""What is on disk about the machine's setup: the runner, the journal, the last ending, the boot.

Read once when a front end starts (and again when a run ends); the state machine decides from
it alone, so every launch of either front end lands on the same stage for the same disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpuwizard.runner.journal import Journal, JournalData, JournalError
from gpuwizard.runner.layout import JOURNAL
from gpuwizard.runner.lock import RunnerStatus, read_run_record, runner_status
from gpuwizard.setup.lease import Holder


@dataclass(frozen=True)
class DiskState:
    runner: RunnerStatus
    journal: JournalData | None
    problem: str | None
    """Why the journal cannot be used (damaged, from a newer gpuwizard); None when it can."""
    outcome: str | None
    """How the last runner ended (run.json): done, failed, reboot, changed, paused, stopped."""
    boot_id: str | None
    """This boot's id, or None when it cannot be read."""
    driven_by: Holder | None = None
    """Another front end that drives this machine's setup (gpuwizard.setup.lease)."""

    @property
    def reboot_pending(self) -> bool:
        return self.journal is not None and self.journal.reboot is not None

    @property
    def rebooted(self) -> bool | None:
        """Whether the machine rebooted since the reboot was asked for (None: cannot tell)."""
        if self.journal is None or self.journal.reboot is None:
            return None
        before = self.journal.reboot.boot_id_before
        if before is None or self.boot_id is None:
            return None
        return before != self.boot_id

    @property
    def run_id(self) -> str | None:
        return self.journal.run_id if self.journal else None


def read_disk(state_dir: Path, boot_id: str | None, driven_by: Holder | None = None) -> DiskState:
    journal: JournalData | None = None
    problem = None
    if (state_dir / JOURNAL).exists():
        try:
            journal = Journal.load(state_dir / JOURNAL).data
        except JournalError as error:
            problem = str(error)
    record = read_run_record(state_dir)
    return DiskState(
        runner=runner_status(state_dir, boot_id),
        journal=journal,
        problem=problem,
        outcome=record.outcome if record else None,
        boot_id=boot_id,
        driven_by=driven_by,
    )
