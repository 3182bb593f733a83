from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import pytest

from gpuwizard.core.codec import CodecError, from_jsonable, to_jsonable


@dataclass(frozen=True)
class Leaf:
    KIND: ClassVar[str] = "leaf"
    name: str
    size: int = 0


@dataclass(frozen=True)
class Other:
    KIND: ClassVar[str] = "other"
    reason: str


@dataclass(frozen=True)
class Tree:
    version: str
    mode: Literal["a", "b"]
    leaves: tuple[Leaf, ...]
    child: Leaf | Other | None = None
    ratio: float = 1.0


def test_a_tree_survives_a_round_trip():
    tree = Tree("12.10", "a", (Leaf("x", 3),), Other("gone"), 2.5)
    assert from_jsonable(Tree, to_jsonable(tree)) == tree


def test_union_members_are_told_apart_by_kind():
    data = {"version": "1", "mode": "b", "leaves": [], "child": {"kind": "other", "reason": "r"}}
    assert from_jsonable(Tree, data).child == Other("r")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(
            {"version": 12.1, "mode": "a", "leaves": []},
            "$.version: expected a string, got the number 12.1 (quote it",
            id="float version names the fix",
        ),
        pytest.param(
            {"version": "1", "mode": "c", "leaves": []},
            "$.mode: expected one of 'a', 'b', got 'c'",
            id="literal",
        ),
        pytest.param(
            {"version": "1", "mode": "a", "leaves": [{"name": 3}]},
            "$.leaves[0].name: expected a string",
            id="nested path",
        ),
        pytest.param(
            {"version": "1", "mode": "a", "leaves": [], "extra": 1},
            "$.extra: unknown field",
            id="unknown field",
        ),
        pytest.param({"mode": "a", "leaves": []}, "$.version: missing", id="missing field"),
        pytest.param(
            {"version": "1", "mode": "a", "leaves": [{"name": "x", "size": True}]},
            "expected an integer, got a boolean",
            id="bool is not int",
        ),
        pytest.param(
            {"version": "1", "mode": "a", "leaves": [], "child": {"kind": "tree"}},
            "$.child.kind: expected one of",
            id="unknown kind",
        ),
        pytest.param([], "$: expected a mapping, got a list", id="not a mapping"),
    ],
)
def test_bad_data_is_refused_with_the_field_path(data, message):
    with pytest.raises(CodecError) as error:
        from_jsonable(Tree, data)
    assert message in str(error.value)


def test_an_int_is_accepted_where_a_float_is_declared():
    tree = from_jsonable(Tree, {"version": "1", "mode": "a", "leaves": [], "ratio": 2})
    assert tree.ratio == 2.0 and isinstance(tree.ratio, float)
