"""``capture-host`` writes only inside a folder it created, never through a planted link (issue 19).

As root in a shared folder, checking a folder and then writing by path lets a local user swap
in a link between the two (``root -> /``) and have real files overwritten. capture-host now
creates the folder itself (0700) and writes with descriptor-relative ``O_NOFOLLOW`` opens.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gpuwizard.frontends.cli import main
from gpuwizard.machine.detect.capture import capture_host
from gpuwizard.machine.detect.recording import recorded_host
from gpuwizard.machine.host import Host
from tests.conftest import profile_dir

PROFILE = "t4-debian12-fresh"


def victim(tmp_path: Path) -> Path:
    """A folder a planted link points at, with a file that must survive."""
    folder = tmp_path / "victim"
    (folder / "etc").mkdir(parents=True)
    (folder / "etc" / "os-release").write_text("precious\n")
    return folder


def untouched(folder: Path) -> bool:
    names = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
    return (
        names == ["etc", "etc/os-release"]
        and (folder / "etc/os-release").read_text() == "precious\n"
    )


def test_the_folder_is_created_private_and_its_files_too_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        capture_host(recorded_host(profile_dir(PROFILE)), tmp_path / "capture", "test")
    finally:
        os.umask(old)
    out = tmp_path / "capture"
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    modes = {stat.S_IMODE(p.lstat().st_mode) for p in out.rglob("*")}
    assert modes <= {0o700, 0o600}, sorted(oct(m) for m in modes)


@pytest.mark.parametrize("kind", ["an empty folder", "a link to a folder"])
def test_an_existing_path_is_refused_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    target = victim(tmp_path)
    given = tmp_path / "capture"
    if kind == "an empty folder":
        given.mkdir()
    else:
        given.symlink_to(target)

    code = main(["--simulate", PROFILE, "capture-host", str(given)])

    assert code == 2
    assert f"capture-host: {given} exists; give a new folder" in capsys.readouterr().err
    assert untouched(target)


def test_a_link_planted_inside_while_detecting_fails_the_capture_instead_of_redirecting_it(
    tmp_path: Path,
) -> None:
    target = victim(tmp_path)
    out = tmp_path / "capture"
    source = recorded_host(profile_dir(PROFILE))

    def run_and_plant(argv, *, timeout_s=10.0):  # type: ignore[no-untyped-def]
        # Between the folder's creation and the first write: the attacker's moment.
        if not (out / "root").exists():
            (out / "root").symlink_to(target)
        return source.run(argv, timeout_s=timeout_s)

    planting = Host(
        root=source.root,
        run=run_and_plant,
        nvml=source.nvml,
        links=source.links,
        empty_dirs=source.empty_dirs,
    )

    with pytest.raises(OSError):  # noqa: PT011 - ELOOP or ENOTDIR: the link is not followed
        capture_host(planting, out, "test")
    assert untouched(target)
    assert (out / "root").is_symlink()
