"""Secrets from a person to the runner, over a private socket, held in memory only.

When a command asks for a secret (a MOK password), the runner announces it by name in the event
stream and listens on ``answer.sock`` in its state directory (mode 0600, owned by the user who
started the run). The TUI or ``gpuwizard apply`` asks the person with masked input and sends the
answer there. The value is never written to a file, a log, an event or the environment; the
runner keeps it for the rest of the run so a prompt that asks twice is answered twice.

One message per connection, one line: ``=`` and the value, or ``!`` when the person declines to
give it (the command that asked is stopped and its step fails; a retry asks again).
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

from gpuwizard.core.plan import SecretRef

SOCKET_NAME = "answer.sock"
MAX_SECRET_BYTES = 4096
MAX_SOCKET_PATH = 100
"""AF_UNIX addresses hold at most 107 bytes; a longer path is reached through its folder's fd."""


class SecretUnanswered(RuntimeError):
    """The secret a command asked for will not come: the command is stopped, its step fails."""


class SecretTimeout(SecretUnanswered):
    """Nobody answered the secret prompt in time."""


class SecretDeclined(SecretUnanswered):
    """The person chose not to give it (Esc, then "cancel the step")."""


_VALUE, _DECLINED = b"=", b"!"


@contextlib.contextmanager
def _address(path: Path) -> Iterator[str]:
    """An address for the socket at ``path`` that fits AF_UNIX, however deep the state dir is.

    A sandbox under a long home directory easily passes 107 bytes (bind fails with "AF_UNIX path
    too long"); the socket is then reached through /proc/self/fd of its directory.
    """
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def _peer_uid(connection: socket.socket) -> int:
    creds = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


class SocketSecrets:
    """The runner's side: ask once per secret name, wait for the answer on the socket."""

    def __init__(
        self,
        state_dir: Path,
        announce: Callable[[SecretRef], None],
        owner_uid: int | None = None,
        timeout_s: float = 1800,
    ) -> None:
        self.path = state_dir / SOCKET_NAME
        self.announce = announce
        self.owner_uid = owner_uid
        self.timeout_s = timeout_s
        self.known: dict[str, str] = {}

    def __call__(self, ref: SecretRef, prompt_text: str) -> str:
        del prompt_text  # the person sees ref.prompt, written by us, not the program's prompt
        if ref.name not in self.known:
            self.known[ref.name] = self._receive(ref)
        return self.known[ref.name]

    def _allowed(self, uid: int) -> bool:
        return uid in (0, os.getuid(), self.owner_uid)

    def _receive(self, ref: SecretRef) -> str:
        self.path.unlink(missing_ok=True)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)  # the socket file is created 0600, never looser
        try:
            with _address(self.path) as address:
                server.bind(address)
        finally:
            os.umask(old_umask)
        if self.owner_uid is not None and os.getuid() == 0:
            os.chown(self.path, self.owner_uid, -1)
        server.listen(1)
        server.settimeout(self.timeout_s)
        self.announce(ref)
        try:
            while True:
                try:
                    connection, _ = server.accept()
                except TimeoutError:
                    raise SecretTimeout(
                        f"nobody answered '{ref.prompt}' within {self.timeout_s:.0f} s"
                    ) from None
                with connection:
                    if not self._allowed(_peer_uid(connection)):
                        continue
                    message = _read_line(connection)
                if message.startswith(_VALUE):
                    return message[1:].decode("utf-8", "replace")
                if message == _DECLINED:
                    asked = ref.prompt.split(":")[0]  # "One-time MOK password", not its advice
                    raise SecretDeclined(f"you cancelled it at its question ({asked})")
        finally:
            server.close()
            self.path.unlink(missing_ok=True)


def _read_line(connection: socket.socket) -> bytes:
    connection.settimeout(10)
    data = b""
    while not data.endswith(b"\n") and len(data) < MAX_SECRET_BYTES:
        chunk = connection.recv(1024)
        if not chunk:
            break
        data += chunk
    return data.rstrip(b"\n")


def send_secret(state_dir: Path, value: str, timeout_s: float = 10) -> None:
    """The asking side: hand the secret to the waiting runner."""
    _send(state_dir, _VALUE + value.encode("utf-8"), timeout_s)


def decline_secret(state_dir: Path, timeout_s: float = 10) -> None:
    """The asking side: the person will not give it; the runner stops the command that asked."""
    _send(state_dir, _DECLINED, timeout_s)


def _send(state_dir: Path, message: bytes, timeout_s: float) -> None:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(timeout_s)
    with contextlib.closing(client):
        with _address(state_dir / SOCKET_NAME) as address:
            client.connect(address)
        client.sendall(message + b"\n")
