"""What every export is made from: the one resolved plan, the selection behind it, and the facts
of the machine it was made on. Pure data: the front ends read it from a run's state."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

from gpuwizard import __version__
from gpuwizard.core.facts import HostFacts
from gpuwizard.core.plan import Plan
from gpuwizard.core.selection import Selection
from gpuwizard.export.hostcheck import in_words
from gpuwizard.recommend.planner import Options
from gpuwizard.recommend.result import Choices

VERIFY_STEP = "verify-torch"
ALREADY_SET_UP = (
    "this machine was set up already, so its plan has nothing left to do but verify: deploy.sh "
    "and the playbook list the other steps as done. For a fresh server, replay answers.yaml "
    "there (gpuwizard apply --config answers.yaml), or export from the run that set this "
    "machine up."
)


class ExportError(ValueError):
    """An export cannot be made; the message says why and what to do."""


@dataclass(frozen=True)
class ExportSource:
    plan: Plan
    selection: Selection
    facts: HostFacts
    version: str = __version__
    """The gpuwizard that made the plan."""
    asked: Choices = field(default_factory=Choices)
    """The pins the person gave: the driver branch, kernel modules and Python an answers file
    repeats only when they were asked for (the plan resolves them otherwise)."""

    @property
    def choices(self) -> Choices:
        """The pins that reproduce this selection's recommendation."""
        s, asked = self.selection, self.asked
        return Choices(
            torch=s.torch.version,
            variant=s.torch.variant,
            keep_driver=s.driver.action == "keep",
            needs_nvcc=s.extras.cuda_toolkit is not None,
            driver_branch=s.driver.branch if asked.driver_branch else None,
            driver_flavour=s.driver.flavor if asked.driver_flavour else None,
            python=s.env.python if asked.python else None,
        )

    @property
    def options(self) -> Options:
        e = self.selection.extras
        return Options(
            env_kind=self.selection.env.kind,
            env_name=PurePosixPath(self.selection.env.path).name,
            needs_nvcc=e.cuda_toolkit is not None,
            cudnn=e.cudnn,
            docker=e.docker,
            dcgm=e.dcgm,
            nccl=e.nccl,
            hold_driver=e.hold_driver,
            persistence=e.persistence,
        )

    @property
    def machine(self) -> str:
        """The machine in one line, for headers: "8x H100 SXM5 80GB, Ubuntu 22.04"."""
        return in_words(self.facts)

    @property
    def already_set_up(self) -> bool:
        """No step but the verification has anything to do: the plan reproduces nothing."""
        return all(s.satisfied or s.id == VERIFY_STEP for s in self.plan.steps)
