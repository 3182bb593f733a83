"""What the person asked for: the pins the engine honours and the options the planner honours.

One value for both, so a wish (the CUDA toolkit, nvcc) is said once and reaches both the engine
and the planner the same way, whichever front end took it. The request a run was prepared from
is kept beside its journal, so a second ``apply`` asking for something else is refused by name
(issue 14), never merged into the run in progress.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from gpuwizard.recommend.planner import Options
from gpuwizard.recommend.result import Choices


@dataclass(frozen=True)
class SetupRequest:
    choices: Choices = field(default_factory=Choices)
    """Pins for the engine: torch release, CUDA build, keep the driver."""
    options: Options = field(default_factory=Options)
    """What else to set up: environment, toolkit, cuDNN, Docker, DCGM, NCCL, holds, persistence."""
    insists: bool = False
    """Given on the command line (``apply``): a run in progress made from another request is
    refused rather than followed. A person choosing in the TUI decides after seeing the run."""
    rebooted: bool | None = None
    """``apply --rebooted yes|no``: the answer to "did this machine restart?" given up front, for
    a reboot no boot signal can judge. Used once, never saved, never compared with a run's."""

    @property
    def engine_choices(self) -> Choices:
        """The engine's input: a build that can compile with nvcc is chosen when nvcc is wanted."""
        return replace(self.choices, needs_nvcc=self.options.needs_nvcc)


FLAGS = {
    "torch": "--torch",
    "variant": "--variant",
    "keep_driver": "--keep-driver",
    "needs_nvcc": "--needs-nvcc",
    "env_kind": "--env",
    "env_name": "--env-name",
    "cudnn": "--cudnn",
    "docker": "--docker",
    "dcgm": "--dcgm",
    "nccl": "--nccl",
    "hold_driver": "--hold-driver",
    "persistence": "--no-persistence",
}
"""``apply``'s flag for each pin and option (persistence is on unless --no-persistence)."""


def _said(value: Any) -> str:
    match value:
        case None:
            return "not given"
        case bool():
            return "on" if value else "off"
        case _:
            return repr(value)


def differences(run: SetupRequest, asked: SetupRequest) -> list[str]:
    """Each pin or option where ``asked`` differs from the request ``run`` was made from, as
    "--flag: the run in progress has X, this command asks Y" (``needs_nvcc`` counted once)."""
    found: dict[str, str] = {}
    parts = ((run.engine_choices, asked.engine_choices), (run.options, asked.options))
    for before, now in parts:
        for item in fields(before):
            old, new = getattr(before, item.name), getattr(now, item.name)
            if old != new and item.name not in found:
                found[item.name] = (
                    f"{FLAGS.get(item.name, item.name)}: the run in progress has {_said(old)}, "
                    f"this command asks {_said(new)}"
                )
    return list(found.values())
