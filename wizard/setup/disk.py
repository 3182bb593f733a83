"""What is on disk about the machine's setup: the runner, the journal, the last ending, the boot.

Read once when a front end starts (and again when a run ends); the state machine decides from
it alone, so every launch of either front end lands on the same stage for the same disk.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpuwizard.core.codec import CodecError, from_jsonable, to_jsonable
from gpuwizard.core.facts import BootMark, judge_boot
from gpuwizard.recommend.result import Choices
from gpuwizard.runner.files import write_atomic
from gpuwizard.runner.journal import Journal, JournalData, JournalError
from gpuwizard.runner.layout import JOURNAL
from gpuwizard.runner.lock import RunnerStatus, read_run_record, runner_status
from gpuwizard.setup.lease import Holder
from gpuwizard.setup.request import SetupRequest

REQUEST = "request.json"


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
    btime: int | None = None
    """When this boot began (/proc/stat), the stand-in for an unreadable boot_id."""
    request: SetupRequest | None = None
    """What the journal's run was made from (None: not recorded, an older gpuwizard's run)."""

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
        outcome=record.outcome if record else None,
        boot_id=mark.boot_id,
        driven_by=driven_by,
        btime=mark.btime,
        request=read_request(state_dir, journal.run_id) if journal else None,
    )


def save_request(state_dir: Path, run_id: str, request: SetupRequest) -> None:
    """Keep what a run was made from beside its journal (no secret is in a request)."""
    data = {"run_id": run_id, "request": request.asked()}
    write_atomic(state_dir / REQUEST, json.dumps(to_jsonable(data), indent=1).encode(), 0o600)


def read_request(state_dir: Path, run_id: str) -> SetupRequest | None:
    """The request ``run_id`` was made from; None when not recorded for that run or unreadable."""
    try:
        data = json.loads((state_dir / REQUEST).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("run_id") != run_id:
            return None
        if "request" not in data:  # kept by gpuwizard before one request carried every choice
            return _older_request(data["choices"], data["options"])
        return from_jsonable(SetupRequest, data["request"])
    except (OSError, ValueError, KeyError, CodecError):
        return None


def _older_request(choices: dict[str, object], options: dict[str, object]) -> SetupRequest:
    """request.json as an older gpuwizard kept it: the engine's pins and the planner's options
    side by side (the nvcc wish said in both; the options' one counts)."""
    pins = {k: v for k, v in choices.items() if k != "needs_nvcc"}
    return from_jsonable(SetupRequest, {**pins, **options})


def asked_in(state_dir: Path) -> Callable[[str], Choices]:
    """The pins each run was made from, as far as kept here (only the latest run's request is)."""

    def asked(run_id: str) -> Choices:
        request = read_request(state_dir, run_id)
        return request.engine_choices if request else Choices()

    return asked
