"""Journal schema 2 keeps the request a run was made from in its selection; a schema-1 journal (a
run in progress when gpuwizard was upgraded), whose selection kept only the optional parts
(``extras``), is read with those parts as its request and saved as schema 2."""

from __future__ import annotations

import json

import pytest

from gpuwizard.core.codec import CodecError, to_jsonable
from gpuwizard.core.request import SetupRequest
from gpuwizard.recommend.table import load_table
from gpuwizard.runner.journal import SCHEMA, new_journal, parse
from gpuwizard.setup.plan import make_plan
from tests.conftest import facts_of

ASKED = SetupRequest(
    driver_branch="580", needs_nvcc=True, cudnn=True, env_kind="conda", env_name="train",
    dcgm=True, persistence=False,
)  # fmt: skip


def as_schema_1(data: dict) -> dict:  # type: ignore[type-arg]
    """The journal as gpuwizard wrote it before the selection kept its request."""
    selection = dict(data["selection"])
    request = selection.pop("request")
    selection["extras"] = {
        "cuda_toolkit": "13.0" if request["needs_nvcc"] else None,
        **{
            k: request[k] for k in ("cudnn", "docker", "dcgm", "nccl", "hold_driver", "persistence")
        },
    }
    return {**data, "schema": 1, "selection": selection}


def test_a_journal_keeps_the_request_its_run_was_made_from() -> None:
    plan, selection = make_plan(load_table(), facts_of("h100x8-ubuntu2204-fresh"), ASKED)
    journal = new_journal("run-1", plan, selection)
    text = json.dumps(to_jsonable(journal))
    assert json.loads(text)["schema"] == SCHEMA == 2
    assert parse(text).selection.request == ASKED


def test_a_schema_1_journal_reads_its_parts_and_environment_as_the_request() -> None:
    plan, selection = make_plan(load_table(), facts_of("h100x8-ubuntu2204-fresh"), ASKED)
    old = as_schema_1(to_jsonable(new_journal("run-1", plan, selection)))

    read = parse(json.dumps(old))

    unpinned = SetupRequest(**{**ASKED.__dict__, "driver_branch": None})
    assert read.selection.request == unpinned, "the parts and the environment; no pins were kept"
    assert read.schema == SCHEMA and read.plan == plan
    assert read.selection.cuda_toolkit == selection.cuda_toolkit == "13.0"


@pytest.mark.parametrize("extras", [["not", "a", "mapping"], {"cudnn": "yes"}, {"colour": True}])
def test_a_damaged_schema_1_selection_is_refused_by_the_codec(extras: object) -> None:
    plan, selection = make_plan(load_table(), facts_of("t4-debian12-fresh"), SetupRequest())
    old = as_schema_1(to_jsonable(new_journal("run-1", plan, selection)))
    old["selection"]["extras"] = extras
    with pytest.raises(CodecError):
        parse(json.dumps(old))
