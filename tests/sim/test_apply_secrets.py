"""Secrets without a terminal (issue 14): headless ``apply`` takes the MOK password from
``--mok-password-file FILE`` (owner-only) or ``--mok-password-stdin``, checks mokutil's rules on
the way in, and without either (and no terminal) stops with exit 2 before any change. The
password reaches mokutil and the simulated MokManager intact and is written nowhere."""

from __future__ import annotations

import hashlib
import io
import subprocess
from pathlib import Path

import pytest

from gpuwizard.frontends.secretinput import (
    SecretInputError,
    read_password_file,
    read_password_stdin,
)
from gpuwizard.runner.layout import EXIT_DONE, EXIT_REBOOT, JOURNAL
from tests.sim.conftest import GPUWIZARD, T4_DEBIAN, WAIT_S

CANARY = "Pw-c4n4ry-'\"$(touch pwned)`touch pwned`\\-!~ x"
MARKER = b"c4n4ry"


def secret_file(folder: Path, text: str, mode: int = 0o600) -> Path:
    path = folder / "mok.txt"
    path.write_text(text)
    path.chmod(mode)
    return path


# ---------------------------------------------------------------------------- on the way in
def test_a_private_file_gives_the_password_without_its_newline(tmp_path: Path):
    assert read_password_file(secret_file(tmp_path, CANARY + "\n")).value == CANARY
    assert read_password_file(secret_file(tmp_path, CANARY + "\r\n", 0o400)).value == CANARY
    assert CANARY not in repr(read_password_file(secret_file(tmp_path, CANARY)))


@pytest.mark.parametrize(
    ("content", "mode", "says"),
    [
        pytest.param(CANARY, 0o640, "group or others may access it (mode 0640); run `chmod 600", id="group-readable"),
        pytest.param(CANARY, 0o604, "mode 0604", id="world-readable"),
        pytest.param(CANARY, 0o620, "mode 0620", id="group-writable"),
        pytest.param("\n", 0o600, "the MOK password is empty", id="empty"),
        pytest.param("x" * 257, 0o600, "longer than mokutil's 256 characters", id="too long"),
        pytest.param("c4n4ry-Ä", 0o600, "must be printable ASCII", id="not ASCII"),
        pytest.param("c4n4ry\tx", 0o600, "must be printable ASCII", id="a control character"),
        pytest.param("c4n4ry\nsecond", 0o600, "more than one line", id="two lines"),
    ],
)  # fmt: skip
def test_a_file_others_may_read_or_a_password_mokutil_refuses_is_refused(
    tmp_path, content, mode, says
):
    path = secret_file(tmp_path, content, mode)

    with pytest.raises(SecretInputError) as refused:
        read_password_file(path)

    assert says in str(refused.value)
    assert "c4n4ry" not in str(refused.value), "the message never repeats the password"


def test_a_link_a_folder_or_a_missing_file_is_refused(tmp_path: Path):
    target = secret_file(tmp_path, CANARY)
    link = tmp_path / "link"
    link.symlink_to(target)
    for path, says in ((link, "cannot open it"), (tmp_path, "not a regular file"), (tmp_path / "none", "cannot open it")):  # fmt: skip
        with pytest.raises(SecretInputError, match=says):
            read_password_file(path)


def test_stdin_gives_it_from_a_pipe_never_from_a_terminal():
    assert read_password_stdin(io.BytesIO(CANARY.encode() + b"\n"), is_tty=False).value == CANARY
    with pytest.raises(SecretInputError, match="reads a pipe"):
        read_password_stdin(io.BytesIO(b""), is_tty=True)


# --------------------------------------------------------------------- against the simulation
def apply(host, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """``gpuwizard apply`` with standard input a pipe, never a terminal (as under cron or CI)."""
    return subprocess.run(
        [*GPUWIZARD, "apply", "--yes", *args, "--simulate", host.profile],
        input=stdin, capture_output=True, env=host.cli_env(), timeout=WAIT_S, check=False,
    )  # fmt: skip


@pytest.fixture
def mok_host(sim):
    host = sim(T4_DEBIAN)
    host.enable_secure_boot()
    digest = hashlib.sha256(CANARY.encode()).hexdigest()
    host.scenario(mok_console_password_sha256=digest)  # what is typed at MokManager
    return host


def test_without_a_terminal_or_a_given_password_apply_stops_before_any_change(mok_host):
    result = apply(mok_host)

    assert result.returncode == 2, result.stdout + result.stderr
    [line] = result.stderr.decode().splitlines()
    assert line.startswith("gpuwizard: the plan needs the mok-password")
    assert "--mok-password-file FILE (chmod 600) or --mok-password-stdin" in line
    assert line.endswith("Nothing was changed")
    assert mok_host.calls() == [], "no tool ran"
    assert not (mok_host.state_dir / JOURNAL).exists(), "no run was even prepared"


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_a_given_password_enrolls_the_key_and_is_written_nowhere(mok_host, tmp_path, how):
    given = tmp_path / "given"
    given.mkdir()
    args, stdin = (
        (("--mok-password-file", str(secret_file(given, CANARY + "\n"))), b"")
        if how == "file"
        else (("--mok-password-stdin",), CANARY.encode() + b"\n")
    )

    codes = [apply(mok_host, *args, stdin=stdin) for _ in range(2)]

    assert [c.returncode for c in codes] == [EXIT_REBOOT, EXIT_DONE], (
        codes[-1].stdout + codes[-1].stderr
    )
    assert mok_host.state().mok == "enrolled", "MokManager got the password byte for byte"
    leaks = [
        str(path.relative_to(tmp_path))
        for path in tmp_path.rglob("*")
        if path.is_file() and path.parent != given and MARKER in path.read_bytes()
    ]
    assert leaks == [], "not in the journal, events, logs, run record, runner.log or sandbox"
    assert not any(MARKER in c.stdout + c.stderr for c in codes)
    assert not list(tmp_path.rglob("pwned")), "no shell ever saw it"


def test_a_refused_password_file_fails_at_once_with_one_line(mok_host, tmp_path):
    path = secret_file(tmp_path, CANARY, 0o644)

    result = apply(mok_host, "--mok-password-file", str(path))

    assert result.returncode == 2
    assert result.stderr.decode().splitlines() == [
        f"gpuwizard: --mok-password-file {path}: group or others may access it (mode 0644); "
        f"run `chmod 600 {path}` first"
    ]
    assert mok_host.calls() == []
    assert path.stat().st_mode & 0o777 == 0o644, "gpuwizard never changes the person's file"
