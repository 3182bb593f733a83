"""What the person asked for: every choice, in one value, whichever front end took it.

The TUI's Recommend view, ``recommend``, ``apply`` and ``export`` flags and an answers file all
build a ``SetupRequest`` and nothing else; the engine and the planner read their parts of it
through ``engine_choices`` and ``options`` (their own vocabularies stay inside them). A wish (the
CUDA toolkit, nvcc) is said once and reaches both the same way. The request a run was prepared
from is kept beside its journal, so a second ``apply`` asking for something else is refused by
name (issue 14), never merged into the run in progress. Pure: it never reads the machine.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from gpuwizard.core.selection import EnvKind, Flavor
from gpuwizard.export.answers import Answers
from gpuwizard.recommend.planner import Options
from gpuwizard.recommend.result import Choices


@dataclass(frozen=True)
class SetupRequest:
    torch: str | None = None
    """A release ("2.14.1"), a series ("2.5") or None/"latest"."""
    variant: str | None = None
    """A CUDA build ("cu130"); None: the engine picks."""
    driver_branch: str | None = None
    """A driver branch ("580"); None: the engine picks."""
    driver_flavour: Flavor | None = None
    """open or proprietary kernel modules; None: the GPUs and the branch decide."""
    python: str | None = None
    """The environment's Python ("3.11"); None: the engine picks."""
    keep_driver: bool = False
    needs_nvcc: bool = False
    """The CUDA toolkit (nvcc) too, and a CUDA build it can compile for."""
    env_kind: EnvKind = "venv"
    env_name: str = "pytorch"
    cudnn: bool = False
    docker: bool = False
    dcgm: bool = False
    nccl: bool = False
    hold_driver: bool = False
    persistence: bool = True
    insists: bool = False
    """Given on the command line (``apply``): a run in progress made from another request is
    refused rather than followed. A person choosing in the TUI decides after seeing the run."""
    rebooted: bool | None = None
    """``apply --rebooted yes|no``: the answer to "did this machine restart?" given up front, for
    a reboot no boot signal can judge. Used once, never saved, never compared with a run's."""

    @property
    def engine_choices(self) -> Choices:
        """The engine's input: the pins."""
        return Choices(
            torch=self.torch,
            variant=self.variant,
            keep_driver=self.keep_driver,
            needs_nvcc=self.needs_nvcc,
            driver_branch=self.driver_branch,
            driver_flavour=self.driver_flavour,
            python=self.python,
        )

    @property
    def options(self) -> Options:
        """The planner's input: the environment and the optional parts."""
        return Options(
            env_kind=self.env_kind,
            env_name=self.env_name,
            needs_nvcc=self.needs_nvcc,
            cudnn=self.cudnn,
            docker=self.docker,
            dcgm=self.dcgm,
            nccl=self.nccl,
            hold_driver=self.hold_driver,
            persistence=self.persistence,
        )

    @property
    def pinned(self) -> bool:
        """Any choice differs from the defaults (the front end must not be asked to drop them)."""
        return self.asked() != SetupRequest().asked()

    def with_pin(self, name: str, value: str | None) -> SetupRequest:
        """This request with one of the engine's text pins set (None: the engine picks)."""
        match name:
            case "torch":
                return replace(self, torch=value)
            case "variant":
                return replace(self, variant=value)
            case "driver_branch":
                return replace(self, driver_branch=value)
            case "driver_flavour":
                flavour: Flavor | None = (
                    "open" if value == "open" else "proprietary" if value == "proprietary" else None
                )
                return replace(self, driver_flavour=flavour)
            case "python":
                return replace(self, python=value)
        raise ValueError(f"{name} is not a pin")

    def asked(self) -> dict[str, Any]:
        """Every choice by name, without the insisting mark and the once-only reboot answer
        (what is kept beside a run, and compared with it)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_KEPT}


_NOT_KEPT = frozenset({"insists", "rebooted"})


def from_answers(answers: Answers) -> SetupRequest:
    """The request an answers file replays: its pins and options, the nvcc wish said once."""
    pins, options = answers.choices, answers.options
    return SetupRequest(
        torch=pins.torch,
        variant=pins.variant,
        driver_branch=pins.driver_branch,
        driver_flavour=pins.driver_flavour,
        python=pins.python,
        keep_driver=pins.keep_driver,
        needs_nvcc=options.needs_nvcc,
        env_kind=options.env_kind,
        env_name=options.env_name,
        cudnn=options.cudnn,
        docker=options.docker,
        dcgm=options.dcgm,
        nccl=options.nccl,
        hold_driver=options.hold_driver,
        persistence=options.persistence,
    )


FLAGS = {
    "torch": "--torch",
    "variant": "--variant",
    "driver_branch": "--driver-branch",
    "driver_flavour": "--kernel-modules",
    "python": "--env-python",
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
"""``apply``'s flag for each choice (persistence is on unless --no-persistence)."""


def _said(value: Any) -> str:
    match value:
        case None:
            return "not given"
        case bool():
            return "on" if value else "off"
        case _:
            return repr(value)


def differences(run: SetupRequest, asked: SetupRequest) -> list[str]:
    """Each choice where ``asked`` differs from the request ``run`` was made from, as
    "--flag: the run in progress has X, this command asks Y"."""
    before, now = run.asked(), asked.asked()
    return [
        f"{FLAGS.get(name, name)}: the run in progress has {_said(old)}, "
        f"this command asks {_said(now[name])}"
        for name, old in before.items()
        if old != now[name]
    ]
