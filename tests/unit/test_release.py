"""tools/release.py: the archive a server without git downloads is the same bytes every time,
holds what bootstrap needs, and its SHA256SUMS line checks with coreutils' sha256sum."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

RELEASE = Path(__file__).resolve().parents[2] / "tools" / "release.py"


def release(out: Path, *args: str) -> Path:
    subprocess.run(
        [sys.executable, str(RELEASE), *args, "--out", str(out)], check=True, capture_output=True
    )
    (made,) = out.glob("gpuwizard-*.tar.gz")
    return made


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return release(tmp_path_factory.mktemp("first"))


def test_the_same_commit_gives_the_same_bytes(made, tmp_path):
    again = release(tmp_path, "HEAD")
    assert again.read_bytes() == made.read_bytes()


def test_sha256sums_names_the_archive_and_sha256sum_checks_it(made):
    line = (made.parent / "SHA256SUMS").read_text()
    assert line == f"{hashlib.sha256(made.read_bytes()).hexdigest()}  {made.name}\n"
    checked = subprocess.run(
        ["sha256sum", "-c", "SHA256SUMS"],
        cwd=made.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0 and checked.stdout == f"{made.name}: OK\n"


def test_everything_sits_under_one_versioned_folder_with_bootstrap_executable(made):
    top = made.name.removesuffix(".tar.gz")
    with tarfile.open(made) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert all(name.startswith(f"{top}/") for name in members)
    bootstrap = members[f"{top}/tools/bootstrap.sh"]
    assert bootstrap.mode == 0o755 and (bootstrap.uid, bootstrap.gid) == (0, 0)
    assert members[f"{top}/pyproject.toml"].mode == 0o644
    assert f"{top}/wizard/recommend/compat.yaml" in members
    assert not any("/.git/" in name or name.endswith(".pyc") for name in members)
