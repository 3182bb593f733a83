"""Tests that still speak the engine's and the planner's vocabularies (``Choices``, ``Options``)
build the one ``SetupRequest`` the front ends build, through this adapter."""

from __future__ import annotations

from gpuwizard.recommend.planner import Options
from gpuwizard.recommend.result import Choices
from gpuwizard.setup.request import SetupRequest


def request_of(choices: Choices | None = None, options: Options | None = None) -> SetupRequest:
    c, o = choices or Choices(), options or Options()
    return SetupRequest(
        torch=c.torch, variant=c.variant, driver_branch=c.driver_branch,
        driver_flavour=c.driver_flavour, python=c.python, keep_driver=c.keep_driver,
        needs_nvcc=o.needs_nvcc or c.needs_nvcc, env_kind=o.env_kind, env_name=o.env_name,
        cudnn=o.cudnn, docker=o.docker, dcgm=o.dcgm, nccl=o.nccl,
        hold_driver=o.hold_driver, persistence=o.persistence,
    )  # fmt: skip
