"""compat.yaml's ``gpu_listings`` against NVIDIA's own lists of supported GPUs, offline.

``tools/check_compat.py`` read the open modules' README at every release tag and the driver
README's Appendix A from every driver package of Ubuntu's and Debian's archives; what it read is
kept in ``tools/compat_gpu_lists_cache.json``. These tests hold the table to that file, check the
parsers on NVIDIA's two formats, and run the tool's readers on a local git repository and a
package built here (no network).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from gpuwizard.recommend import gpu_lists
from gpuwizard.recommend.gpu_lists import appendix_ids, find, open_readme_ids, readme_version
from gpuwizard.recommend.table import CompatTable, load_table, parse_table

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "tools" / "compat_gpu_lists_cache.json"

OPEN_README = """# NVIDIA Linux Open GPU Kernel Module Source

## Compatible GPUs

| Product Name                                            | PCI ID         |
| ------------------------------------------------------- | -------------- |
| NVIDIA TITAN RTX                                        | 1E02           |
| Tesla T4                                                | 1EB8 10DE 12A2 |
| NVIDIA GB10                                             | 2E12 10DE 21EC |
"""

DRIVER_README = """NVIDIA Accelerated Linux Graphics Driver README and Installation Guide

    Most Recent Driver Version: 580.95.05

Appendix A. Supported NVIDIA GPU Products
Appendix B. X Config Options

______________________________________________________________________________

Appendix A. Supported NVIDIA GPU Products
______________________________________________________________________________

A1. CURRENT NVIDIA GPUS

 NVIDIA GPU product                                       Device PCI ID*  VDPAU features
 -------------------------------------------------------  --------------  --------------
 NVIDIA GeForce GTX 1080 Ti                               1B06            H
 Tesla T4                                                 1EB8 10DE 12A2
 NVIDIA GB10                                              2E12 10DE 21EC  -

Below are the legacy GPUs that are no longer supported in the unified driver.

 Tesla K80                                        102D            D

Appendix B. X Config Options
"""


def cached() -> gpu_lists.GpuListsRead:
    return gpu_lists.parse(CACHE.read_text(encoding="utf-8"))


def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_compat", ROOT / "tools/check_compat.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lists_tool() -> ModuleType:
    tool()  # puts tools/ on sys.path, as the script does
    return sys.modules["nvidia_lists"]


def table_with(change) -> CompatTable:
    data = yaml.safe_load((ROOT / "wizard/recommend/compat.yaml").read_text(encoding="utf-8"))
    change(next(r for r in data["gpu_listings"] if r["device_id"] == change.device))
    return parse_table(yaml.safe_dump(data))


# -------------------------------------------------------------------------------- the formats
def test_the_open_readme_table_gives_device_ids_with_or_without_a_subsystem():
    assert open_readme_ids(OPEN_README) == {"1e02", "1eb8", "2e12"}
    assert open_readme_ids("# a README before 515.48.07, with no table") == frozenset()


def test_appendix_a_gives_the_current_gpus_and_stops_at_the_legacy_tables():
    assert readme_version(DRIVER_README) == "580.95.05"
    assert appendix_ids(DRIVER_README) == {"1b06", "1eb8", "2e12"}  # not K80 (legacy)


def test_what_the_lists_say_of_a_device():
    releases = ["580.94.11", "580.94.13", "580.94.16", "580.119.02", "595.45.04", "610.1"]
    found = find(releases, ["580.94.13", "580.119.02", "595.45.04"])
    assert (found.first, found.before, found.gaps, found.gap_branches) == (
        "580.94.13",
        "580.94.11",
        ("580.94.16",),
        ("580",),
    )
    assert (found.last, found.dropped, found.last_branch) == ("595.45.04", "610.1", "595")
    never = find(releases, [])
    assert (never.first, never.gaps, never.last_branch) == (None, (), None)


# --------------------------------------------------------------------------------- the cache
def test_the_cache_is_dated_and_read_both_lists():
    lists = cached()
    assert lists.checked == "2026-12-04"
    assert lists.open.source.startswith("https://github.com/NVIDIA/open-gpu-kernel-modules")
    assert lists.open.releases[0] == "515.48.07" and lists.open.releases[-1] == "595.45.04"
    assert len(lists.open.releases) > 150 and len(lists.proprietary.releases) > 30
    assert {"535.274.02", "550.163.01", "580.178.04"} <= set(lists.proprietary.releases)
    assert all(
        lists.proprietary.origin[r].startswith("nvidia-") for r in lists.proprietary.releases
    )


def test_compat_yaml_agrees_with_nvidia_s_lists():
    assert gpu_lists.disagreements(load_table(), cached()) == []


def test_the_table_names_every_gpu_of_the_simulated_hosts_and_the_issue():
    listed = {row.device_id for row in load_table().gpu_listings}
    wanted = {"20b0", "20b2", "2330", "233b", "26b9", "2b85", "1eb8", "1db1", "2684"}
    assert wanted | {"1b06", "2b00", "2342", "2941", "2e12", "102d"} <= listed


def test_gb10_s_first_listing_is_unconfirmed_because_later_releases_leave_it_out():
    row = load_table().gpu_listing("2e12")
    assert row is not None and not row.confirmed
    assert (row.open, row.open_gaps) == ("580.94.13", ("580", "590"))
    found = gpu_lists.finding(cached(), "2e12", "open")
    assert found is not None and "580.95.05" in found.gaps


class Edit:
    def __init__(self, device: str, **fields: object) -> None:
        self.device, self.fields = device, fields

    def __call__(self, row: dict[str, object]) -> None:
        row.update(self.fields)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        pytest.param(
            Edit("2e12", open="580.119.02"),
            "gpu_listings[2e12 GB10] open: table says 580.119.02, but the lists first name it "
            "in 580.94.13 (after 580.94.11, which does not)",
            id="a first listing later than the lists'",
        ),
        pytest.param(
            Edit("2335", open="550.40.07"),
            "table says 550.40.07, but the lists first name it in 550.40.65",
            id="a first listing earlier than a release that leaves it out",
        ),
        pytest.param(
            Edit("1db1", open="580.65.06"),
            "table says 580.65.06, but no release read lists it",
            id="open modules for Volta",
        ),
        pytest.param(
            Edit("2e12", open_gaps=["590"]),
            "open_gaps: table says ['590'], the lists ['580', '590']",
            id="a gap missing",
        ),
        pytest.param(
            Edit("20b1", last_branch=None),
            "last branch: table or catalogue say none, the appendix 470",
            id="a last branch missing",
        ),
        pytest.param(
            Edit("2b00", integrated=False),
            "integrated: table says False, the catalogue True",
            id="an integrated GPU not marked",
        ),
    ],
)
def test_each_kind_of_disagreement_is_found(edit, expected):
    found = gpu_lists.disagreements(table_with(edit), cached())
    assert any(expected in line for line in found), found


def test_gaps_in_the_lists_make_a_row_unconfirmed():
    with pytest.raises(Exception, match="lists with gaps make it confirmed: false"):
        table_with(Edit("2e12", confirmed=True))


# ---------------------------------------------------------------------------------- the tool
def test_the_tool_offline_reports_every_gpu_and_fails_on_a_doctored_cache(tmp_path, capsys):
    module = tool()
    assert module.main(["--offline", "--only", "gpus"]) == 0
    out = capsys.readouterr().out
    for row in load_table().gpu_listings:
        assert f"10de:{row.device_id} {row.name}: open: " in out
    assert "10de:2e12 GB10: open: first 580.94.13 (not in 580.94.11); left out in 580.94.16" in out
    assert "compat.yaml agrees with NVIDIA's lists" in out
    lists = cached()
    listed = dict(lists.listed)
    listed["2e12"] = {"open": ("580.119.02",), "proprietary": listed["2e12"]["proprietary"]}
    doctored = tmp_path / "gpus.json"
    doctored.write_text(gpu_lists.dump(dataclasses.replace(lists, listed=listed)))
    assert module.main(["--offline", "--only", "gpus", "--gpu-cache", str(doctored)]) == 1
    assert "disagreement(s)" in capsys.readouterr().out


def test_upstream_versions_are_read_from_package_versions():
    upstream = lists_tool().upstream
    assert upstream("580.178.04-0ubuntu0.22.04.1") == "580.178.04"
    assert upstream("440.82+really.440.64-0ubuntu6") == "440.64"
    assert upstream("535.274.02-1~deb13u1") == "535.274.02"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_open_lists_are_read_at_every_release_tag(tmp_path):
    repo = tmp_path / "open"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.invalid")
    _git(repo, "config", "user.name", "t")
    for tag, body in (("515.43.04", "# no table yet"), ("580.95.05", OPEN_README), ("v1", "x")):
        (repo / "README.md").write_text(body)
        _git(repo, "add", "README.md")
        _git(repo, "commit", "-q", "-m", tag)
        _git(repo, "tag", tag)
    lists, listed = lists_tool().read_open(repo / ".git")
    assert lists.releases == ("580.95.05",)  # a tag without the table lists nothing
    assert listed["580.95.05"] == {"1e02", "1eb8", "2e12"}
    assert lists.origin["580.95.05"].startswith("tag 580.95.05 (")


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb")
def test_a_driver_package_s_readme_is_read_and_a_transitional_one_has_none(tmp_path):
    import gzip

    root = tmp_path / "pkg"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN/control").write_text(
        "Package: nvidia-driver-580\nVersion: 580.95.05-0ubuntu1\nArchitecture: amd64\n"
        "Maintainer: t <t@example.invalid>\nDescription: test\n"
    )
    docs = root / "usr/share/doc/nvidia-driver-580"
    docs.mkdir(parents=True)
    (docs / "README.txt.gz").write_bytes(gzip.compress(DRIVER_README.encode()))
    deb = tmp_path / "driver.deb"
    subprocess.run(["dpkg-deb", "--build", str(root), str(deb)], check=True, capture_output=True)
    text = lists_tool().readme_of(deb)
    assert text is not None and appendix_ids(text) == {"1b06", "1eb8", "2e12"}
    (docs / "README.txt.gz").unlink()
    subprocess.run(["dpkg-deb", "--build", str(root), str(deb)], check=True, capture_output=True)
    assert lists_tool().readme_of(deb) is None


def test_private_apt_never_touches_the_host_s_configuration(tmp_path):
    apt = lists_tool().PrivateApt(tmp_path / "apt")
    config = (tmp_path / "apt/apt.conf").read_text()
    assert f'Dir::Etc "{tmp_path}/apt/etc";' in config
    assert f'Dir::State::status "{tmp_path}/apt/status";' in config
    sources = (tmp_path / "apt/etc/sources.list").read_text()
    assert "archive.ubuntu.com/ubuntu noble-updates main restricted multiverse" in sources
    assert "deb.debian.org/debian trixie non-free contrib" in sources
    assert apt.env == {"APT_CONFIG": f"{tmp_path}/apt/apt.conf"}
