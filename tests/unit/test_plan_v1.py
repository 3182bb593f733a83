"""Plan schema 2 stores typed operations; a schema-1 plan (every command ``Run(argv)``) still loads.

A journal written before operations were typed, of a run in progress or waiting for its reboot,
must resume after an upgrade. tests/golden/plans-v1.json holds the runs gpuwizard 735d5b5 (the
last with schema 1) planned for the cases below; each must be read into exactly the operation
the steps plan now, and anything that does not render back byte for byte stays a ``Command``.
One change since is on purpose: every Python gpuwizard starts gets ``-I`` (issue 28), and a
schema-1 Python command (pip, venv, the verify probe) is read into one that runs isolated.
Since issue 27 uv makes the venv and installs PyTorch where gpuwizard pins a uv for the CPU; the
cases are planned as on a CPU without one (``pip_era``), which plans what schema 1 recorded, and
``uv venv`` has ``--clear`` since (uv 0.13 refuses an existing folder without it) and no
``--seed`` (create-env installs the pinned pip by its hash): a schema-1 ``uv venv`` no longer
renders back, so it stays a ``Command`` that runs as recorded (``schema_1_form``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest

from gpuwizard.core.codec import CodecError, to_jsonable
from gpuwizard.core.facts import HostFacts
from gpuwizard.core.ops import (
    AptInstall,
    AptUpdate,
    Command,
    Download,
    Fingerprint,
    NoPin,
    PipInstall,
    SecretRef,
    Sha256,
    UvPythonInstall,
    UvVenv,
)
from gpuwizard.core.plan import Plan, WriteFile
from gpuwizard.core.plan_v1 import RunV1, recognise
from gpuwizard.core.request import SetupRequest
from gpuwizard.core.selection import Selection
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.planner import plan_for
from gpuwizard.recommend.result import Recommendation
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import target_from_facts
from gpuwizard.runner.journal import new_journal, parse
from gpuwizard.steps.install_python import UV
from tests.conftest import facts_of
from tests.export.conftest import ALL_OPTIONS, PROFILES
from tests.schema1 import recorded_runs, v1_action, v1_plan


@contextlib.contextmanager
def pip_era() -> Iterator[None]:
    """Plans as on a CPU gpuwizard pins no uv for: pip installs PyTorch, as in schema 1's days."""
    with (
        mock.patch("gpuwizard.steps.create_env.uv_runs", return_value=False),
        mock.patch("gpuwizard.steps.install_torch.uv_runs", return_value=False),
    ):
        yield


def _plan(facts: HostFacts, options: SetupRequest) -> tuple[Selection, Plan]:
    table = load_table()
    recommendation = recommend(table, target_from_facts(facts, table), SetupRequest())
    assert isinstance(recommendation, Recommendation)
    with pip_era():
        return plan_for(facts, recommendation, options, table)


def _boot(facts: HostFacts, **changes: Any) -> HostFacts:
    return dataclasses.replace(facts, boot=dataclasses.replace(facts.boot, **changes))


LATER = (
    "t4-debian12-secureboot",
    "h200-vm-ubuntu2404-preinstalled",
    "a10g-ubuntu2204-dlami-conda",
    "h100pcie-ubuntu2204-lambda-stack",
    "rtx4090-ubuntu2204-driver570-torch-cu130",
)
PROFILES_THEN = [p for p in PROFILES if p not in LATER]
"""The recorded hosts 735d5b5 had (the others came later, with schema 2)."""


def _cases() -> Iterator[tuple[str, tuple[Selection, Plan]]]:
    """The cases the fixture was made from, by the same names (keep the two in step)."""
    for profile in PROFILES_THEN:
        yield profile, _plan(facts_of(profile), SetupRequest())
        yield f"{profile}-all-options", _plan(facts_of(profile), ALL_OPTIONS)
    secure = _boot(facts_of("t4-debian12-fresh"), secure_boot="enabled")
    yield "t4-debian12-secureboot-mok", _plan(secure, SetupRequest())
    h100 = facts_of("h100x8-ubuntu2204-fresh")
    yield "h100x8-conda", _plan(h100, SetupRequest(env_kind="conda"))
    yield "h100x8-dpkg-interrupted", _plan(_boot(h100, dpkg_interrupted=True), SetupRequest())


@functools.cache
def cases() -> dict[str, tuple[Selection, Plan]]:
    return dict(_cases())


RUNS, RECORDED = recorded_runs()
MEANT_SINCE = {
    # b1b1cea (issue 14): mokutil --import takes 1-256 characters; 8-16 is --password's rule.
    "One-time MOK password (8-16 characters): you type it again at the blue MokManager screen "
    "on the next boot": "One-time MOK password: you type it again at the blue MokManager screen "
    "on the next boot",
}
"""Texts of the recorded runs that later commits changed on purpose: the commands stay the same."""


def _as_meant_now(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _as_meant_now(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_meant_now(item) for item in value]
    return MEANT_SINCE.get(value, value) if isinstance(value, str) else value


RUNS = [_as_meant_now(run) for run in RUNS]


def recorded_v1_plan(name: str) -> dict[str, Any]:
    """The case's plan as schema 1 wrote it: its file writes, and the runs gpuwizard recorded."""
    _, plan = cases()[name]
    data = v1_plan(schema_1_form(plan))
    for step in data["steps"]:
        writes = iter(a for a in step["actions"] if a["kind"] == "write")
        recorded = iter(RUNS[i] for i in RECORDED[name].get(step["id"], []))
        step["actions"] = [
            next(writes) if a["kind"] == "write" else next(recorded) for a in step["actions"]
        ]
        assert next(recorded, None) is None, f"{name}/{step['id']}: it planned fewer runs"
    return data


def is_pinned_pip(action: Any) -> bool:
    path = action.path if isinstance(action, WriteFile) else getattr(action, "hashes_file", None)
    return path is not None and "/pip-" in path


def schema_1_form(plan: Plan) -> Plan:
    """The plan as a schema-1 journal reads into now: uv's commands as they were recorded (``uv
    venv`` without ``--clear``, no ``UV_SYSTEM_CERTS``, which came later), so Commands that run as
    recorded, never a typed operation that would run otherwise."""

    def old(action: Any) -> Any:
        if not isinstance(action, UvVenv | UvPythonInstall):
            return action
        run = action.command()
        argv = tuple(word for word in run.argv if word != "--clear")
        if isinstance(action, UvVenv):  # seeded then; the pinned pip came later
            argv = (action.uv, "venv", "--seed", "--python", action.version, action.path)
        env = {key: value for key, value in run.env.items() if key != "UV_SYSTEM_CERTS"}
        return Command(
            argv, env=env, timeout_s=run.timeout_s, silence_timeout_s=run.silence_timeout_s
        )

    def then(step: Any) -> tuple[Any, ...]:
        # create-env fetches uv itself since 2026-12-05 (schema 1 used install-python's), and
        # installs the pinned pip by its hash since 2026-12-05 (schema 1: uv venv --seed)
        fetched = step.id == "create-env" and any(isinstance(a, UvVenv) for a in step.actions)
        return tuple(
            old(a)
            for a in step.actions
            if not (fetched and isinstance(a, Download) and a.dest == UV)
            and not (fetched and is_pinned_pip(a))
        )

    steps = tuple(dataclasses.replace(s, actions=then(s)) for s in plan.steps)
    return dataclasses.replace(plan, steps=steps)


def test_the_fixture_covers_the_same_cases() -> None:
    assert set(RECORDED) == set(cases())


@pytest.mark.parametrize("name", list(RECORDED))
def test_each_command_is_what_schema_1_planned_for_the_same_case(name: str) -> None:
    """The typed plan renders every command exactly as before: same argv, env, limits, retry."""
    _, plan = cases()[name]
    for step in schema_1_form(plan).steps:
        runs = [r for r in map(v1_action, step.actions) if r["kind"] == "run"]
        assert runs == [RUNS[i] for i in RECORDED[name].get(step.id, [])], step.id


@pytest.mark.parametrize("name", list(RECORDED))
def test_a_schema_1_plan_is_read_into_exactly_the_operations_planned_now(name: str) -> None:
    _, plan = cases()[name]
    assert Plan.from_json(json.dumps(recorded_v1_plan(name))) == schema_1_form(plan)


@pytest.mark.parametrize("name", list(RECORDED))
def test_a_schema_2_plan_round_trips_typed(name: str) -> None:
    _, plan = cases()[name]
    text = plan.to_json()
    assert json.loads(text)["schema"] == 2
    assert Plan.from_json(text) == plan


def test_a_schema_1_journal_is_read_typed_and_saved_as_schema_2(tmp_path) -> None:  # type: ignore[no-untyped-def]
    selection, plan = cases()["h100x8-ubuntu2204-fresh"]
    journal = new_journal("run-1", plan, selection)
    data = to_jsonable(journal)
    data["plan"] = recorded_v1_plan("h100x8-ubuntu2204-fresh")
    read = parse(json.dumps(data))
    assert read == journal
    assert json.loads(json.dumps(to_jsonable(read)))["plan"]["schema"] == 2


def test_a_plan_of_another_schema_is_refused_with_a_one_line_reason() -> None:
    _, plan = cases()["t4-debian12-fresh"]
    data = to_jsonable(plan)
    data["schema"] = 3
    with pytest.raises(CodecError, match=r"^\$\.schema: expected 2 \(or 1\), got 3$"):
        Plan.from_json(json.dumps(data))


# ----------------------------------------------------------------------------- recognition
def test_a_command_that_renders_back_exactly_becomes_its_operation() -> None:
    update = AptUpdate().command()
    assert recognise(RunV1(update.argv, update.env, timeout_s=900, retry_on_lock=True)) == (
        AptUpdate()
    )
    fetch = Download("https://example.com/k", "/etc/k.gpg", Fingerprint("AB" * 20), dearmor=True)
    assert recognise(RunV1(fetch.command().argv, timeout_s=1800, silence_timeout_s=300)) == fetch


@pytest.mark.parametrize(
    "run",
    [
        pytest.param(RunV1(("apt-get", "install", "x")), id="apt-get without the runner's options"),
        pytest.param(
            RunV1(AptUpdate().command().argv, AptUpdate().command().env, timeout_s=900),
            id="apt-get update without its lock retry",
        ),
        pytest.param(
            RunV1(AptInstall(("x",)).command().argv, timeout_s=3600),
            id="apt-get install without its environment",
        ),
        pytest.param(
            RunV1(("gpuwizard-fetch", "https://example.com/a", "/a", "--bogus")),
            id="a downloader option no operation has",
        ),
        pytest.param(
            RunV1(("/e/bin/python", "-m", "pip", "install", "--upgrade", "x")),
            id="a pip option no operation has",
        ),
        pytest.param(
            RunV1(("mokutil", "--import", "/k"), answers={"password:": SecretRef("mok", "MOK")}),
            id="a command that answers prompts",
        ),
    ],
)
def test_a_command_no_operation_renders_exactly_stays_that_command(run: RunV1) -> None:
    """That command, as it was; a Python one isolated (issue 28: -I is the one change)."""
    python = run.argv[0].endswith("/bin/python")
    assert recognise(run) == Command(
        (run.argv[0], "-I", *run.argv[1:]) if python else run.argv,
        env=run.env,
        answers=run.answers,
        creates=run.creates,
        timeout_s=run.timeout_s,
        silence_timeout_s=run.silence_timeout_s,
        ok_codes=run.ok_codes,
    )


def test_recognised_operations_keep_their_pins_and_options() -> None:
    _, plan = cases()["a100x4-ubuntu2004-fresh"]
    ops = [a for s in plan.steps for a in s.actions]
    assert any(isinstance(a, Download) and isinstance(a.check, Sha256) for a in ops)
    assert any(isinstance(a, PipInstall) and a.force_reinstall and a.quiet for a in ops)
    assert not any(isinstance(a, Download) and isinstance(a.check, NoPin) for a in ops)
