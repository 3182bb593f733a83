"""What every export is made from: the one resolved plan, the selection behind it, and the facts
of the machine it was made on. Pure data: the front ends read it from a run's state."""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuwizard import __version__
from gpuwizard.core.facts import HostFacts
from gpuwizard.core.plan import Plan
from gpuwizard.core.request import SetupRequest
from gpuwizard.core.selection import Selection
from gpuwizard.export.hostcheck import in_words

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

    @property
    def replayed(self) -> SetupRequest:
        """The request that plans this selection again: the one it was made from, with the
        release, the CUDA build and the driver decision it resolved to (a pin the person left to
        gpuwizard, a driver branch or a Python, stays left to it)."""
        s = self.selection
        if s.env.existing is not None:  # the PyTorch that is there decides: nothing to pin
            return replace(s.request, keep_driver=True)
        return replace(
            s.request,
            torch=s.torch.version,
            variant=s.torch.variant,
            keep_driver=s.driver.action == "keep",
        )

    @property
    def machine(self) -> str:
        """The machine in one line, for headers: "8x H100 SXM5 80GB, Ubuntu 22.04"."""
        return in_words(self.facts)

    @property
    def already_set_up(self) -> bool:
        """No step but the verification has anything to do: the plan reproduces nothing."""
        return all(s.satisfied or s.id == VERIFY_STEP for s in self.plan.steps)
