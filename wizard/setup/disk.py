"""What is on disk about the machine's setup: the runner, the journal, the last ending, the boot.

Read once when a front end starts (and again when a run ends); the state machine decides from
it alone, so every launch of either front end lands on the same stage for the same disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpuwizard.core.facts import BootMark, judge_boot
from gpuwizard.runner.events import StopReason
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
    stopped: StopReason | None
    """How the last runner stopped before the run's end (run.json): failed, reboot, changed,
    paused...; None when it finished the run, or none ran."""
    boot_id: str | None
    """This boot's id, or None when it cannot be read."""
    driven_by: Holder | None = None
    """Another front end that drives this machine's setup (wizard/setup/lease.py)."""
    btime: int | None = None
    """When this boot began (/proc/stat), the stand-in for an unreadable boot_id."""

    @property
    def reboot_pending(self) -> bool:
        return self.journal is not None and self.journal.reboot is not None

    @property
    def rebooted(self) -> bool | None:
        """Whether the machine rebooted since the reboot was asked for (None: cannot tell)."""
        if self.journal is None or self.journal.reboot is None:
            return None
        same = judge_boot(self.journal.reboot.mark, self.boot).same
        return None if same is None else not same

    @property
    def boot(self) -> BootMark:
        """This boot's mark, as read."""
        return BootMark(self.boot_id, self.btime)

    @property
    def run_id(self) -> str | None:
        return self.journal.run_id if self.journal else None


def read_disk(
    state_dir: Path, boot: BootMark | str | None, driven_by: Holder | None = None
) -> DiskState:
    """The disk as it is now; ``boot`` is this boot's mark (a bare string: its boot_id)."""
    mark = boot if isinstance(boot, BootMark) else BootMark(boot)
    journal: JournalData | None = None
    problem = None
    if (state_dir / JOURNAL).exists():
        try:
            journal = Journal.load(state_dir / JOURNAL).data
        except JournalError as error:
            problem = str(error)
    record = read_run_record(state_dir)
    return DiskState(
        runner=runner_status(state_dir, mark),
        journal=journal,
        problem=problem,
        stopped=_stopped(record.outcome if record else None),
        boot_id=mark.boot_id,
        driven_by=driven_by,
        btime=mark.btime,
    )


def _stopped(outcome: str | None) -> StopReason | None:
    """run.json's outcome as the fold names it: "done" (or none) is no stop; a word a newer
    gpuwizard wrote is a stop all the same."""
    if outcome is None or outcome == "done":
        return None
    try:
        return StopReason(outcome)
    except ValueError:
        return StopReason.STOPPED
