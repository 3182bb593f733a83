"""The operations are a closed set the codec can tell apart, each rendered by ``command()``."""

from __future__ import annotations

import json
import typing

import pytest

from gpuwizard.core import ops
from gpuwizard.core.codec import from_jsonable, to_jsonable
from gpuwizard.core.plan import StepPlan

EXAMPLES: tuple[ops.Action, ...] = (
    ops.AptUpdate(),
    ops.AptInstall(("a", "b"), recommends=False),
    ops.AptUpgrade(),
    ops.AptHold(("a",)),
    ops.DpkgConfigure(),
    ops.AptFixBroken(),
    ops.DnfInstall(("a",)),
    ops.DnfUpgrade(),
    ops.DnfModuleEnable("nvidia-driver:580-open"),
    ops.DnfVersionLock("*nvidia*580*"),
    ops.Download("pypi:uv==1.0", "/opt/uv", ops.Sha256("ab" * 32), member="uv", dearmor=False),
    ops.Service("restart", "docker", timeout_s=300),
    ops.Reboot(),
    ops.PipInstall("/e", ("torch==2.1",), "https://i.example/simple", quiet=True),
    ops.PipDownload("/e", "https://pypi.org/simple", "/d", "/d.hashes.txt"),
    ops.UvPipInstall("/opt/uv", "/e", index_url="https://pypi.org/simple", hashes_file="/d.txt"),
    ops.Venv("/usr/bin/python3.12", "/e"),
    ops.UvVenv("/opt/uv", "3.12", "/e"),
    ops.UvPythonInstall("/opt/uv", "3.12"),
    ops.CondaCreate("/c/bin/conda", "/e", "3.12"),
    ops.MiniforgeInstall("/d/Miniforge3.sh", "/c"),
    ops.Command(("modprobe", "nvidia"), ok_codes=(0, 1)),
    ops.WriteFile("/etc/x", "y\n", 0o600),
)


def test_every_operation_has_an_example_and_its_own_kind() -> None:
    members = typing.get_args(ops.Action)
    assert {type(e) for e in EXAMPLES} == set(members)
    kinds = [m.KIND for m in members]
    assert len(kinds) == len(set(kinds)), "the codec tells operations apart by their kind"


@pytest.mark.parametrize("action", EXAMPLES, ids=lambda a: type(a).__name__)
def test_every_operation_round_trips_through_json(action: ops.Action) -> None:
    step = StepPlan("s", "S", "why", (action,))
    assert from_jsonable(StepPlan, json.loads(json.dumps(to_jsonable(step)))) == step


def test_an_operation_keeps_its_own_limits_in_its_command() -> None:
    command = ops.Service("restart", "docker", timeout_s=300).command()
    assert command.argv == ("systemctl", "restart", "docker")
    assert (command.timeout_s, command.silence_timeout_s) == (300, 600)


def test_uv_installs_into_the_environment_checking_the_hashes_file() -> None:
    op = ops.UvPipInstall("/opt/uv", "/e", index_url="https://pypi.org/simple", hashes_file="/h")
    command = op.command()
    assert command.argv == (
        "/opt/uv", "pip", "install", "--python", "/e/bin/python",
        "--index-url", "https://pypi.org/simple", "--verify-hashes", "-r", "/h",
    )  # fmt: skip
    assert command.env["UV_NO_CONFIG"] == "1"
    assert command.env["UV_SYSTEM_CERTS"] == "1"  # the machine's CA store, as pip uses
    assert op.image_command().argv[3] == "--no-cache"
    pins = ops.UvPipInstall("/opt/uv", "/e", ("torch==2.1",)).command().argv
    assert pins[-3:] == ("--python", "/e/bin/python", "torch==2.1")


def test_the_image_forms_add_their_flag_once() -> None:
    argv = ops.AptInstall(("a",), recommends=False).image_command().argv
    assert argv.count("--no-install-recommends") == 1 and argv[-2:] == (
        "--no-install-recommends",
        "a",
    )
    pip = ops.PipInstall("/e", ("x==1",)).image_command().argv
    assert pip[:6] == ("/e/bin/python", "-I", "-m", "pip", "install", "--no-cache-dir")
