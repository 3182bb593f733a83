"""`gpuwizard recommend` answers for every host the compatibility table covers (issue 17):
Grace (aarch64) hosts, Ubuntu 20.04-26.04, RHEL/Rocky/Alma 8-10, every torch release from the
guide's 1.12.1 to 2.15.0. A known OS or release never gives a usage error."""

from __future__ import annotations

import json

import pytest

from gpuwizard.frontends.cli import main
from gpuwizard.recommend.table import load_table


def recommend(capsys, *argv: str) -> tuple[int, dict[str, object], str]:
    code = main(["recommend", *argv, "--json"])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if out.out else {}), out.err


@pytest.mark.parametrize(
    ("gpu", "variant"), [("GH200", "cu130"), ("HGX GB200", "cu130"), ("GB10", "cu130")]
)
def test_grace_superchips_are_answered_as_aarch64_hosts(capsys, gpu, variant):
    code, data, _ = recommend(capsys, "--gpu", gpu, "--os", "ubuntu:24.04")
    assert code == 0, data
    assert data["torch"]["variant"] == variant  # type: ignore[index]
    assert any("arm64" in u for u in data["unconfirmed"])  # type: ignore[attr-defined]


def test_a_grace_superchip_on_x86_64_is_a_one_line_usage_error(capsys):
    code, _, err = recommend(capsys, "--gpu", "GH200", "--os", "ubuntu:24.04", "--arch", "x86_64")
    assert code == 2 and "--arch x86_64: GH200" in err and err.count("\n") == 1


@pytest.mark.parametrize("os_spec", [f"{o.id}:{o.version}" for o in load_table().operating_systems])
def test_every_known_os_release_is_answered(capsys, os_spec):
    code, data, err = recommend(capsys, "--gpu", "L40S", "--os", os_spec)
    assert code == 0, (data, err)


@pytest.mark.parametrize("os_spec", ["ubuntu:26.10", "debian:14", "rocky:11", "rhel:10.2"])
def test_a_newer_release_of_a_known_os_is_a_best_guess_with_a_warning(capsys, os_spec):
    code, data, _ = recommend(capsys, "--gpu", "L40S", "--os", os_spec)
    assert code == 0, data
    if os_spec != "rhel:10.2":  # a minor release is that major release, no guess
        assert any("newer than gpuwizard's table" in u for u in data["unconfirmed"])  # type: ignore[attr-defined]


def test_an_older_unknown_release_is_still_a_usage_error(capsys):
    code, _, err = recommend(capsys, "--gpu", "L40S", "--os", "ubuntu:18.04")
    assert code == 2 and "unknown OS" in err


@pytest.mark.parametrize("version", [r.version for r in load_table().torch_releases])
def test_every_release_is_answered_never_a_usage_error(capsys, version):
    code, data, err = recommend(capsys, "--gpu", "A100", "--os", "ubuntu:22.04", "--torch", version)
    assert code == 0, (data, err)
    assert data["torch"]["version"] == version  # type: ignore[index]


def test_the_guides_recipe_is_answered(capsys):
    # the user's guide: A100, Ubuntu 20.04, driver 470, torch 1.12.1 (+cu116)
    code, data, _ = recommend(
        capsys,
        "--gpu",
        "A100",
        "--os",
        "ubuntu:20.04",
        "--driver",
        "470.256.02",
        "--torch",
        "1.12.1",
        "--variant",
        "cu116",
    )
    assert code == 0
    assert data["torch"]["variant"] == "cu116" and data["driver"]["action"] == "keep"  # type: ignore[index]
