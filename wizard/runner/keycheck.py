"""Check a downloaded repository key against its pinned fingerprint, and dearmor it.

    python3 keycheck.py FILE FINGERPRINT [--dearmor]

A repository key is trusted for every package of its repository, so it is never taken on the
word of the server it came from: the file must hold exactly one primary public key (a second
one would be trusted too), and that key's fingerprint (OpenPGP v4: SHA-1, v6: SHA-256 over the
key packet) must be the one pinned in gpuwizard's data. With ``--dearmor`` the file is replaced
by the binary keyring apt's ``signed-by`` expects. Exit 1 and one line on stderr otherwise.

The runner's gpuwizard-fetch imports it; exported scripts (deploy.sh, the Ansible playbook) carry
this very file's text and run it with the target's python3, so it uses the standard library
only and runs on Python 3.8 (Ubuntu 20.04's). It never fetches anything and never trusts a key.
"""

from __future__ import annotations

import base64
import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

PUBLIC_KEY = 6
SECRET_KEY = 5
ARMOR_BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"


class KeyRefused(ValueError):
    """The file is not exactly the pinned key; the message says why, in one line."""


def dearmor(data: bytes) -> bytes:
    """The binary packets of an ASCII-armoured key (binary data is returned as it is)."""
    text = data.decode("ascii", "replace")
    if ARMOR_BEGIN not in text:
        return data
    lines = text[text.index(ARMOR_BEGIN) :].splitlines()[1:]
    body = []
    in_headers = True
    for line in lines:
        stripped = line.strip()
        if in_headers:  # "Version: ..." headers, then an empty line
            in_headers = bool(stripped) and ":" in stripped
            if in_headers or not stripped:
                continue
        if stripped.startswith(("-----END", "=")):
            break
        body.append(stripped)
    try:
        return base64.b64decode("".join(body), validate=True)
    except ValueError:
        raise KeyRefused("the key's ASCII armour is not valid base64") from None


def _length(data: bytes, at: int, first: int) -> tuple[int, int]:
    """A new-format packet length at ``at`` (its first octet is ``first``): (length, next)."""
    if first < 192:
        return first, at + 1
    if first < 224:
        if at + 1 >= len(data):
            raise KeyRefused("the key ends inside a packet header")
        return ((first - 192) << 8) + data[at + 1] + 192, at + 2
    if first == 255:
        return int.from_bytes(data[at + 1 : at + 5], "big"), at + 5
    raise KeyRefused("the key uses partial packet lengths, which no key packet may")


def packets(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(tag, body) of each OpenPGP packet; KeyRefused on anything malformed."""
    at = 0
    while at < len(data):
        header = data[at]
        if not header & 0x80:
            raise KeyRefused("the file is not an OpenPGP key")
        if header & 0x40:  # new format
            tag = header & 0x3F
            if at + 1 >= len(data):
                raise KeyRefused("the key ends inside a packet header")
            size, at = _length(data, at + 1, data[at + 1])
        else:  # old format
            tag, kind = (header >> 2) & 0x0F, header & 0x03
            if kind == 3:
                raise KeyRefused("the key has a packet of indeterminate length")
            width = 1 << kind
            size, at = int.from_bytes(data[at + 1 : at + 1 + width], "big"), at + 1 + width
        if at + size > len(data):
            raise KeyRefused("the key is truncated")
        yield tag, data[at : at + size]
        at += size


def fingerprint(body: bytes) -> str:
    """The fingerprint of a public key packet's body, upper-case hex."""
    version = body[:1]
    if version == b"\x04":  # v4 fingerprints are SHA-1 by definition (RFC 4880 12.2)
        return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper()
    if version == b"\x06":
        return hashlib.sha256(b"\x9b" + len(body).to_bytes(4, "big") + body).hexdigest().upper()
    raise KeyRefused(f"the key has OpenPGP version {body[:1].hex() or 'none'}, not 4 or 6")


def primary_fingerprints(keyring: bytes) -> list[str]:
    """The fingerprints of every primary key in a binary keyring."""
    found = []
    for tag, body in packets(keyring):
        if tag == SECRET_KEY:
            raise KeyRefused("the file holds a secret key")
        if tag == PUBLIC_KEY:
            found.append(fingerprint(body))
    return found


def checked_key(data: bytes, pinned: str) -> bytes:
    """The binary keyring, when ``data`` holds exactly the pinned primary key."""
    keyring = dearmor(data)
    found = primary_fingerprints(keyring)
    want = pinned.replace(" ", "").upper()
    if found != [want]:
        shown = ", ".join(found) or "no key"
        raise KeyRefused(f"the key is not the pinned one: expected {want}, the file holds {shown}")
    return keyring


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--dearmor"):
        sys.stderr.write("usage: keycheck.py FILE FINGERPRINT [--dearmor]\n")
        return 2
    path, pinned = Path(argv[0]), argv[1]
    try:
        keyring = checked_key(path.read_bytes(), pinned)
    except KeyRefused as error:
        sys.stderr.write(f"{path}: {error}; it was not used\n")
        return 1
    if len(argv) == 3:
        dearmored = path.with_name(path.name + ".dearmored")
        dearmored.write_bytes(keyring)
        dearmored.replace(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
