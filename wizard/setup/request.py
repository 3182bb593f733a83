"""What the person asked for: the pins the engine honours and the options the planner honours.

One value for both, so a wish (the CUDA toolkit, nvcc) is said once and reaches both the engine
and the planner the same way, whichever front end took it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpuwizard.planner import Options
from gpuwizard.recommend.result import Choices


@dataclass(frozen=True)
class SetupRequest:
    choices: Choices = field(default_factory=Choices)
    """Pins for the engine: torch release, CUDA build, keep the driver."""
    options: Options = field(default_factory=Options)
    """What else to set up: environment, toolkit, cuDNN, Docker, DCGM, NCCL, holds, persistence."""

    @property
    def engine_choices(self) -> Choices:
        """The engine's input: a build that can compile with nvcc is chosen when nvcc is wanted."""
        return replace(self.choices, needs_nvcc=self.options.needs_nvcc)
