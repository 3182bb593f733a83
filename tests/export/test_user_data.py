"""cloud-init user-data that a cloud accepts (issue 29): every built-in profile's export is
gzip-compressed #cloud-config under EC2's 16 KiB, the same bytes every time, and says its size
against each cloud's documented limit. cloud-init itself unpacks and validates it in a real
Debian root: tests/chroot/test_user_data.py."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys

import pytest

from gpuwizard.export.formats import ExportFile, render
from gpuwizard.export.source import ExportError
from gpuwizard.export.user_data import LIMITS, compress, size_note
from tests.cli.helpers import gpuwizard
from tests.export.conftest import ALL_OPTIONS, PROFILES, source_for

EC2_BYTES = 16 * 1024
NEEDS_CONSOLE = ("t4-debian12-secureboot",)


def user_data(profile: str) -> ExportFile:
    (file,) = render(source_for(profile), "cloud-init")
    return file


@pytest.mark.parametrize("profile", [p for p in PROFILES if p not in NEEDS_CONSOLE])
def test_every_built_in_profile_is_under_16_kib_as_exported(profile):
    file = user_data(profile)
    assert file.name == "cloud-init.yaml.gz"
    assert len(file.data) < EC2_BYTES, f"{profile}: {len(file.data):,} bytes"
    assert gzip.decompress(file.data).decode() == file.content
    assert file.content.startswith("#cloud-config\n")


def test_a_profile_that_needs_a_console_is_refused_not_exported():
    with pytest.raises(ExportError, match="nobody can type"):
        user_data(NEEDS_CONSOLE[0])


def test_the_same_text_gives_the_same_bytes():
    text = user_data("h100x8-ubuntu2204-fresh").content
    assert compress(text) == compress(text)
    assert compress(text)[4:8] == b"\0\0\0\0", "no time stamp in the gzip header"


def test_the_note_gives_the_size_and_the_clouds_it_fits():
    file = user_data("h100x8-ubuntu2204-fresh")
    note = file.note
    assert note.startswith(
        f"{len(file.data):,} bytes gzip-compressed ({len(file.content.encode()):,} as text"
    )
    assert "under the user-data limits of EC2, OpenStack, Azure" in note
    assert "Google Cloud takes text (256 KiB): give it zcat's output, which fits" in note
    assert " over " not in note


def test_a_file_over_a_limit_is_said_to_be_over_by_how_much():
    note = size_note(b"x" * 20_000, 70_000)
    assert "over EC2's 16,383 by 3,617" in note
    assert "under the user-data limits of OpenStack, Azure" in note
    assert "which fits" in note


def test_every_option_on_the_largest_plan_is_said_when_it_runs_over():
    """Not a built-in default: every optional step on Rocky; the note must tell the truth either way."""
    (file,) = render(source_for("l40sx4-rocky9-fresh", ALL_OPTIONS), "cloud-init")
    fits = len(file.data) < EC2_BYTES
    assert ("under the user-data limits of EC2" in file.note) == fits
    assert ("over EC2's" in file.note) != fits


def test_each_limit_names_its_source_and_when_it_was_read():
    for limit in LIMITS:
        assert limit.source.startswith("https://") and "read 20" in limit.source, limit.cloud


# ------------------------------------------------------------------------ through the command
H100 = "h100x8-ubuntu2204-fresh"


def test_stdout_carries_the_same_bytes_as_the_file(tmp_path):
    written = gpuwizard(tmp_path, "--simulate", H100, "export", "--format", "cloud-init", "-o", str(tmp_path / "out"))  # fmt: skip
    assert written.returncode == 0, written.stderr
    file = tmp_path / "out" / "cloud-init.yaml.gz"
    assert f"  {file}" in written.stdout.splitlines()
    assert "bytes gzip-compressed" in written.stdout and "EC2" in written.stdout
    env = {"PATH": "/usr/bin:/bin", "XDG_STATE_HOME": str(tmp_path)}
    piped = subprocess.run(
        [sys.executable, "-m", "gpuwizard", "--simulate", H100, "export", "--format", "cloud-init"],
        capture_output=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == file.read_bytes()
    assert b"bytes gzip-compressed" in piped.stderr


def test_compressed_bytes_are_never_written_to_a_terminal(tmp_path):
    main, pane = os.openpty()
    env = {"PATH": "/usr/bin:/bin", "XDG_STATE_HOME": str(tmp_path)}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "gpuwizard", "--simulate", H100, "export", "--format", "cloud-init"],
            stdout=pane, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
        )  # fmt: skip
        os.set_blocking(main, False)
        try:
            shown = os.read(main, 65536)
        except BlockingIOError:
            shown = b""
    finally:
        os.close(main)
        os.close(pane)
    assert done.returncode == 2
    assert done.stderr == (
        "gpuwizard: cloud-init.yaml.gz is gzip-compressed: send it to a file (> cloud-init.yaml.gz) or use -o DIR\n"
    )
    assert b"\x1f\x8b" not in shown
