"""Issue 30's cases through the real ``gpuwizard recommend`` (no --simulate; hosts described with
--gpu and --os), as a person runs it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.helpers import gpuwizard


def test_jetson_agx_thor_is_refused_in_one_line_naming_jetpack(tmp_path: Path) -> None:
    done = gpuwizard(tmp_path, "recommend", "--gpu", "10de:2b00", "--os", "ubuntu:24.04")
    assert done.returncode == 3, done.stderr
    said = (done.stdout + done.stderr).strip().splitlines()
    assert len(said) == 1 and "integrated GPU" in said[0] and "JetPack" in said[0]


def test_pascal_with_open_r580_gets_r580_proprietary(tmp_path: Path) -> None:
    done = gpuwizard(
        tmp_path,
        "recommend",
        "--gpu",
        "10de:1b06",
        "--os",
        "ubuntu:22.04",
        "--driver",
        "580.95.05",
        "--driver-flavor",
        "open",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    driver = json.loads(done.stdout)["driver"]
    assert (driver["action"], driver["branch"], driver["flavor"]) == (
        "upgrade",
        "580",
        "proprietary",
    )


def test_a100_on_debian_13_with_cu126_stays_on_a_supported_branch(tmp_path: Path) -> None:
    args = ("recommend", "--gpu", "A100", "--os", "debian:13", "--variant", "cu126", "--json")
    done = gpuwizard(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    driver = json.loads(done.stdout)["driver"]
    assert (driver["source"], driver["branch"]) == ("cuda-repo-apt", "580")


def test_k80_on_debian_12_names_each_branch_its_reasons_are_about(tmp_path: Path) -> None:
    done = gpuwizard(tmp_path, "recommend", "--gpu", "K80", "--os", "debian:12")
    assert done.returncode == 3
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert (
        "(it offers R595 and R580 from NVIDIA's repository, R535 from Debian's archive)"
        in (lines[0])
    )
    assert [line.split()[1] for line in lines[1:]] == ["R595", "R580", "R535"]
