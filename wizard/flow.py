"""The wizard's stages and where each leads. Pure: the App maps stages to screens, nothing more.

DETECT -> RECOMMEND -> REVIEW -> INSTALL -> (REBOOT -> RESUME -> INSTALL)* -> VERIFY -> BENCHMARK
-> EXPORT -> DONE.
Starting up, the stage comes from the state on disk, so launching after a reboot, after an SSH
drop or while a runner works lands on the right screen (ARCHITECTURE U1, B2).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from gpuwizard.runner.lock import RunnerStatus


class Stage(Enum):
    DETECT = "detect"
    RECOMMEND = "recommend"
    REVIEW = "review"
    INSTALL = "install"
    REBOOT = "reboot"
    RESUME = "resume"
    VERIFY = "verify"
    BENCHMARK = "benchmark"
    EXPORT = "export"
    DONE = "done"


@dataclass(frozen=True)
class StartState:
    """What is on disk when the wizard starts."""

    runner: RunnerStatus
    has_journal: bool
    finished: bool
    reboot_pending: bool
    """The journal records a reboot request."""
    boot_changed: bool
    """...and the boot_id now differs from the one recorded: the reboot happened."""


def start_stage(state: StartState) -> Stage:
    if state.runner == "running":
        return Stage.INSTALL  # attach to the runner at work
    if not state.has_journal or state.finished:
        return Stage.DETECT
    if state.reboot_pending:
        return Stage.RESUME if state.boot_changed else Stage.REBOOT
    return Stage.INSTALL  # an unfinished run: continue it


def after_install(outcome: str) -> Stage:
    """Where a finished stretch of the install leads: its outcome from the runner's last event."""
    if outcome == "reboot":
        return Stage.REBOOT
    if outcome == "done":
        return Stage.VERIFY
    return Stage.INSTALL


NEXT: dict[Stage, Stage] = {
    Stage.DETECT: Stage.RECOMMEND,
    Stage.RECOMMEND: Stage.REVIEW,
    Stage.REVIEW: Stage.INSTALL,
    Stage.REBOOT: Stage.RESUME,
    Stage.RESUME: Stage.INSTALL,
    Stage.VERIFY: Stage.BENCHMARK,
    Stage.BENCHMARK: Stage.EXPORT,
    Stage.EXPORT: Stage.DONE,
}
"""Where a stage leads when its screen is simply confirmed."""
