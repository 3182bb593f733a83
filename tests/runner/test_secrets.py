"""The secret's socket (gpuwizard.runner.secrets): a value reaches the runner, a person's "no"
stops the command that asked (issue 31: it used to wait 30 minutes), and a line that is neither
is not taken for either."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from gpuwizard.core.plan import SecretRef
from gpuwizard.runner.secrets import (
    SOCKET_NAME,
    SecretDeclined,
    SecretTimeout,
    SocketSecrets,
    _send,
    decline_secret,
    send_secret,
)

REF = SecretRef("mok-password", "One-time MOK password")


def asked(tmp_path: Path, timeout_s: float = 10) -> tuple[threading.Thread, list[object]]:
    """The runner's side, waiting in a thread; its answer (or exception) lands in the list."""
    got: list[object] = []
    listening = threading.Event()  # announced once the socket listens, as the runner says so
    secrets = SocketSecrets(tmp_path, lambda ref: listening.set(), timeout_s=timeout_s)

    def wait() -> None:
        try:
            got.append(secrets(REF, "Password:"))
        except Exception as error:
            got.append(error)

    thread = threading.Thread(target=wait)
    thread.start()
    assert listening.wait(10), "the runner's side never listened"
    return thread, got


def test_a_value_sent_is_the_answer(tmp_path: Path) -> None:
    thread, got = asked(tmp_path)
    send_secret(tmp_path, "Correct=Horse!9")  # the framing's own characters inside a value
    thread.join(10)
    assert got == ["Correct=Horse!9"]
    assert not (tmp_path / SOCKET_NAME).exists(), "the socket goes once answered"


def test_a_declined_secret_stops_the_command_that_asked(tmp_path: Path) -> None:
    thread, got = asked(tmp_path)
    decline_secret(tmp_path)
    thread.join(10)
    assert len(got) == 1 and isinstance(got[0], SecretDeclined)
    assert str(got[0]) == "you cancelled it at its question (One-time MOK password)"


def test_a_line_that_is_neither_is_ignored_and_the_wait_goes_on(tmp_path: Path) -> None:
    thread, got = asked(tmp_path)
    _send(tmp_path, b"cancel", 10)  # no framing: neither a value nor a "no"
    send_secret(tmp_path, "x")  # taken only because the wait went on past the line before
    thread.join(10)
    assert got == ["x"]


def test_nobody_answering_in_time_is_said_so(tmp_path: Path) -> None:
    thread, got = asked(tmp_path, timeout_s=0.3)
    thread.join(10)
    assert len(got) == 1 and isinstance(got[0], SecretTimeout)
    with pytest.raises(FileNotFoundError):  # the socket went with the question
        send_secret(tmp_path, "late")
