"""compat.yaml is validated at load: a bad row fails here, not on a user's server."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources

import pytest
import yaml

from gpuwizard.recommend import os_support
from gpuwizard.recommend.os_support import load_os_support
from gpuwizard.recommend.table import (
    CompatTableError,
    compile_table,
    compiled_table,
    load_table,
    parse_table,
)


def shipped_text() -> str:
    return resources.files("gpuwizard.recommend").joinpath("compat.yaml").read_text("utf-8")


def edited(change) -> str:
    data = yaml.safe_load(shipped_text())
    change(data)
    return yaml.safe_dump(data)


def shipped_compiled() -> str:
    return resources.files("gpuwizard.recommend").joinpath("compat.json").read_text("utf-8")


def test_the_compiled_copy_is_current() -> None:
    assert shipped_compiled() == compile_table(shipped_text()), (
        "compat.json is stale: run python tools/compile_compat.py"
    )


def test_the_compiled_copy_is_the_same_table_and_is_what_loads() -> None:
    compiled = compiled_table(shipped_compiled(), shipped_text())
    assert compiled is not None
    assert compiled == parse_table(shipped_text()) == load_table()


def test_the_os_rows_read_alone_are_the_tables() -> None:
    alone = load_os_support()
    assert alone.operating_systems == load_table().operating_systems
    assert alone.reviewed == load_table().reviewed


@pytest.mark.parametrize("edited", [False, True])
def test_the_os_rows_come_from_the_compiled_copy_only_while_it_is_current(
    monkeypatch: pytest.MonkeyPatch, tmp_path, edited: bool
) -> None:
    compiled = json.loads(shipped_compiled())
    compiled["table"]["operating_systems"][0]["note"] = "from the compiled copy"
    text = shipped_text().replace("2026-12-03", "2026-12-04", 1) if edited else shipped_text()
    (tmp_path / "compat.yaml").write_text(text)
    (tmp_path / "compat.json").write_text(json.dumps(compiled))
    monkeypatch.setattr(os_support, "HERE", tmp_path)
    load_os_support.cache_clear()
    try:
        note = load_os_support().operating_systems[0].note
    finally:
        load_os_support.cache_clear()
    assert (note == "from the compiled copy") is not edited  # an edited YAML: the table's rows


def test_without_a_compiled_copy_the_os_rows_come_from_the_yaml(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    (tmp_path / "compat.yaml").write_text(shipped_text())
    monkeypatch.setattr(os_support, "HERE", tmp_path)
    load_os_support.cache_clear()
    try:
        alone = load_os_support()
    finally:
        load_os_support.cache_clear()
    assert alone.operating_systems == load_table().operating_systems
    assert alone.reviewed == load_table().reviewed


def test_the_os_rows_never_import_the_table_module() -> None:
    code = "import sys, gpuwizard.recommend.os_support; print('gpuwizard.recommend.table' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_compiled_copy_of_another_text_is_never_used() -> None:
    edited_text = shipped_text().replace('reviewed: "2026-12-04"', 'reviewed: "2026-12-05"')
    assert edited_text != shipped_text()
    assert compiled_table(shipped_compiled(), edited_text) is None
    assert compiled_table('{"table": {}}', shipped_text()) is None  # no stamp, no use


def test_a_compiled_copy_is_checked_like_the_yaml() -> None:
    data = json.loads(shipped_compiled())
    data["table"]["torch_releases"][0]["default"] = "cu999"
    with pytest.raises(CompatTableError, match="default is not one of its variants"):
        compiled_table(json.dumps(data), shipped_text())


def test_the_shipped_table_is_valid_and_dated(table):
    assert table.reviewed == "2026-12-04"
    assert table.torch("2.14.1") is not None
    assert "newest torch release whose whole set is confirmed" in table.latest_policy


def test_every_row_cites_a_known_source(table):
    rows = [
        *table.drivers,
        *table.torch_releases,
        *table.wheel_builds,
        *table.operating_systems,
        *table.cuda_releases,
    ]
    assert all(row.sources and set(row.sources) <= set(table.sources) for row in rows)


def test_unconfirmed_facts_are_marked(table):
    release = table.torch("2.15.0")
    assert release is not None and not release.confirmed and "UNCONFIRMED" in (release.note or "")
    assert release.torchvision == "0.29.2"  # its Requires-Dist (torch>=2.14.0) admits 2.15.0


def test_every_source_has_an_address_and_a_date(table):
    for key, source in table.sources.items():
        assert source.address.startswith("http"), key
        assert "2026-12-02" <= source.checked <= table.reviewed, key


def test_every_release_from_the_guides_1_12_1_to_2_15_0_is_known(table):
    versions = {r.version for r in table.torch_releases}
    assert {"1.12.1", "1.13.0", "2.0.0", "2.1.1", "2.2.1", "2.3.0", "2.15.0"} <= versions
    assert len(versions) == 31


def _first(key):
    def change(data):
        return data[key][0]

    return change


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(
            lambda d: d["torch_releases"][0].update(sources=[]), "cites no source", id="no source"
        ),
        pytest.param(
            lambda d: d["torch_releases"][1].update(sources=["S99"]),
            "unknown source 'S99'",
            id="unknown source",
        ),
        pytest.param(
            lambda d: d["torch_releases"][1].update(version=2.141),
            "expected a string, got the number 2.141 (quote it",
            id="float version",
        ),
        pytest.param(
            lambda d: d["torch_releases"][1].update(default="cu999"),
            "default is not one of its variants",
            id="bad default",
        ),
        pytest.param(
            lambda d: d["torch_releases"][1].update(variants=["cu126", "cu130", "cu132", "cu121"]),
            "no wheel_builds row for cu121",
            id="variant without builds",
        ),
        pytest.param(
            lambda d: d["torch_releases"][1].update(torchvision=None),
            "needs its torchvision pair",
            id="confirmed without torchvision",
        ),
        pytest.param(
            lambda d: d["operating_systems"][0].update(driver_branches=["999"]),
            "unknown driver branch 999",
            id="unknown branch",
        ),
        pytest.param(
            lambda d: d["drivers"][0].update(designation="BETA"),
            "designation",
            id="bad designation",
        ),
        pytest.param(
            lambda d: d.update(reviewed="yesterday"), "reviewed: not a date", id="undated"
        ),
        pytest.param(
            lambda d: d["torch_releases"].append(dict(d["torch_releases"][1])),
            "duplicate version",
            id="duplicate release",
        ),
        pytest.param(
            lambda d: d["drivers"][1].update(surprise=True), "unknown field", id="unknown field"
        ),
        pytest.param(
            lambda d: d["sources"]["PYPI"].update(checked="yesterday"),
            "sources[PYPI]: checked: not a date",
            id="undated source",
        ),
        pytest.param(
            lambda d: d["sources"]["PYPI"].update(checked="2027-01-01"),
            "checked after the table was reviewed",
            id="source from the future",
        ),
        pytest.param(
            lambda d: d["sources"]["PYPI"].update(address=" "),
            "needs an address",
            id="source without an address",
        ),
        pytest.param(
            lambda d: d["sources"].update(S99="a source without address or date"),
            "sources.S99: expected a mapping",
            id="a bare string source",
        ),
        pytest.param(
            lambda d: d["torch_releases"][1].update(variants=["cu130", "cu132"]),
            "torch 2.14.1 is in its range but does not list cu126",
            id="a build row claims a release that does not list it",
        ),
        pytest.param(
            lambda d: d["torch_releases"][1].update(aarch64_default="cu128"),
            "aarch64_default cu128 is not one of its aarch64 builds",
            id="aarch64 default outside its builds",
        ),
        pytest.param(
            lambda d: next(r for r in d["torch_releases"] if r["version"] == "2.5.1").update(
                aarch64=["cu124"]
            ),
            "no wheel_builds row for cu124 on aarch64",
            id="aarch64 build without a row",
        ),
        pytest.param(
            lambda d: d.update(latest_policy=""), "say which release latest means", id="no policy"
        ),
        pytest.param(
            lambda d: d["operating_systems"][0].update(driver_versions={"580": "580.178.04"}),
            "R580 is not offered here",
            id="an archive version for a branch not offered",
        ),
        pytest.param(
            lambda d: d["operating_systems"][0].update(driver_versions={"570": "580.178.04"}),
            "580.178.04 is not an R570 driver",
            id="an archive version of another branch",
        ),
    ],
)
def test_a_bad_row_is_refused_with_its_location(change, message):
    with pytest.raises(CompatTableError) as error:
        parse_table(edited(change))
    assert message in str(error.value)


def test_broken_yaml_is_refused():
    with pytest.raises(CompatTableError, match="not valid YAML"):
        parse_table("schema: [1\n")
