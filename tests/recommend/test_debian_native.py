"""Debian's own driver as a driver source: offered where it fits, chosen when it does, and the
reason either way; its data file is validated like compat.yaml.

Both Debian releases carry a branch past its end of life (bookworm R535, trixie R550), so a
supported branch from NVIDIA's repository that fits wins (issue 30); Debian's driver is chosen
when its branch is asked for (DEBIAN_OWN), with a warning that says so."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from gpuwizard.core.request import SetupRequest
from gpuwizard.recommend.debian_native import load_drivers, parse_drivers
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.result import Recommendation
from gpuwizard.recommend.table import CompatTableError
from gpuwizard.recommend.target import target_from_facts, target_from_spec
from tests.conftest import facts_of

T4 = "t4-debian12-fresh"
DEBIAN_OWN = SetupRequest(variant="cu126", driver_branch="535")


def chosen(table, target, choices: SetupRequest | None = None) -> Recommendation:
    result = recommend(table, target, choices or SetupRequest())
    assert isinstance(result, Recommendation), result
    return result


def reasons_for(result: Recommendation) -> dict[str, str]:
    return {r.option: r.reason for r in result.rejected}


def test_by_default_nvidia_s_r580_wins_and_debian_s_end_of_life_driver_offers_no_way_in(table):
    result = chosen(table, target_from_facts(facts_of(T4), table))
    assert (result.driver.source, result.driver.branch) == ("cuda-repo-apt", "580")
    why = reasons_for(result)["install R535 proprietary from Debian's archive"]
    assert "needs driver 580" in why
    assert "--variant" not in why  # cu126 would not make an end-of-life branch win


def test_with_a_build_debian_s_driver_runs_nvidia_s_supported_r580_still_wins(table):
    result = chosen(table, target_from_facts(facts_of(T4), table), SetupRequest(variant="cu126"))
    assert (result.driver.source, result.driver.branch) == ("cuda-repo-apt", "580")
    why = reasons_for(result)["install R535 proprietary from Debian's archive"]
    assert why.startswith("R535 is LTSB, end of life since 2026-06; R580 is LTSB, supported")


def test_bookworm_s_open_module_is_not_offered_and_says_why(table):
    result = chosen(table, target_from_facts(facts_of(T4), table))
    why = reasons_for(result)["install R535 open from Debian's archive"]
    assert why.startswith(
        "not offered: nvidia-open-kernel-dkms 535.261.03-1 depends on firmware-nvidia-gsp"
    )
    assert "(checked 2026-12-03)" in why


def test_asked_for_by_branch_debian_s_own_driver_is_chosen_with_a_warning(table):
    result = chosen(table, target_from_facts(facts_of(T4), table), DEBIAN_OWN)
    d = result.driver
    assert (d.source, d.branch, d.version, d.flavor) == (
        "debian-archive",
        "535",
        "535.309.01",
        "proprietary",
    )
    assert d.packages[:4] == ("nvidia-kernel-dkms", "libcuda1", "nvidia-smi", "nvidia-persistenced")
    assert any("no third-party repository" in r for r in result.reasons)
    assert reasons_for(result)["install R580 open"] == "not the branch asked for (R535)"
    assert not any("cuda-repo-apt" in u for u in result.unconfirmed)
    warning = next(r for r in result.reasons if r.startswith("warning: R535"))
    assert "past its end of life (since 2026-06)" in warning and "asked for" in warning


def test_trixie_offers_both_flavours_of_r550(table):
    target = target_from_spec(table, ["T4"], "debian:13")
    result = chosen(table, target, SetupRequest(variant="cu126", driver_branch="550"))
    assert (result.driver.source, result.driver.branch) == ("debian-archive", "550")
    assert "install R550 open from Debian's archive" in reasons_for(result)
    assert not any(r.reason.startswith("not offered") for r in result.rejected)


def test_a_gpu_debian_s_branch_is_too_old_for_is_told_so(table):
    target = target_from_spec(table, ["RTX 5090"], "debian:12")
    why = reasons_for(chosen(table, target))["install R535 open from Debian's archive"]
    assert why.startswith("not offered")  # bookworm has no open module at all
    proprietary = reasons_for(chosen(table, target)).get(
        "install R535 proprietary from Debian's archive", ""
    )
    assert "requires the open kernel modules" in proprietary or "too old" in proprietary


def test_nvswitch_systems_never_get_it(table):
    target = dataclasses.replace(target_from_spec(table, ["H100 SXM5"], "debian:12"), nvswitch=True)
    result = chosen(table, target, SetupRequest(variant="cu126"))
    assert result.driver.source == "cuda-repo-apt"
    assert (
        "nvidia-fabricmanager"
        in reasons_for(result)["install R535 proprietary from Debian's archive"]
    )


def test_ubuntu_and_rocky_are_not_offered_debian_s_driver(table):
    for name in ("h100x8-ubuntu2204-fresh", "l40sx4-rocky9-fresh"):
        result = chosen(table, target_from_facts(facts_of(name), table))
        assert not any("Debian's archive" in r.option for r in result.rejected), name


def test_the_shipped_rows_are_dated_and_cite_their_sources():
    drivers = load_drivers()
    assert drivers.checked == "2026-12-03"
    assert {r.codename for r in drivers.releases} == {"bookworm", "trixie"}


def _edited(change) -> str:
    from pathlib import Path

    import gpuwizard.recommend.debian_native as module

    data = yaml.safe_load(Path(module.__file__).with_name("debian_drivers.yaml").read_text())
    change(data["releases"][0])
    return yaml.safe_dump(data)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(lambda r: r.update(sources=["D99"]), "unknown one", id="unknown source"),
        pytest.param(
            lambda r: r.update(driver="550.163.01"), "disagree", id="driver of another branch"
        ),
        pytest.param(
            lambda r: r.pop("open_problem"), "no open_problem", id="open missing without reason"
        ),
        pytest.param(lambda r: r.update(branch=535), "expected a string", id="unquoted branch"),
    ],
)
def test_a_bad_row_is_refused_naming_it(change, message):
    with pytest.raises(CompatTableError, match=message):
        parse_drivers(_edited(change))
