"""Check a downloaded repository key against its pinned fingerprint; keep that one key alone.

    python3 -I keycheck.py FILE FINGERPRINT|UNPINNED [--dearmor]

A repository key is trusted for every package of its repository, so it is never taken on the
word of the server it came from: the file must be one key and nothing else (exactly one
ASCII-armoured block, or binary packets, holding exactly one primary public key; anything
before or after the block is refused, since apt's and dnf's readers would trust a second key
there), and that key's fingerprint (OpenPGP v4: SHA-1, v6: SHA-256 over the key packet) must be
the one pinned in gpuwizard's data. ``UNPINNED`` is for the keys gpuwizard's data marks
UNCONFIRMED: the file must still hold exactly one primary key. Either way the file is then
replaced by the checked key alone, never kept as downloaded: with ``--dearmor`` the binary
keyring apt's ``signed-by`` expects, else the same packets in a fresh ASCII armour (dnf's
``gpgkey``). Exit 1 and one line on stderr otherwise.

The runner's gpuwizard-fetch imports it; exported scripts (deploy.sh, the Ansible playbook) carry
this very file's text and run it with the target's python3 (``-I``), so it uses the standard
library only and runs on Python 3.8 (Ubuntu 20.04's). It never fetches anything and never trusts
a key.
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


ARMOR_END = "-----END PGP PUBLIC KEY BLOCK-----"
UNPINNED = "UNPINNED"
"""In place of a fingerprint: any one primary key (UNCONFIRMED in gpuwizard's data)."""


def dearmor(data: bytes) -> bytes:
    """The binary packets of an ASCII-armoured key (binary data is returned as it is).

    The file must be exactly one armoured block: text before or after it (a second block, a
    key appended) is refused, and a checksum line must match the data.
    """
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        text = ""
    if ARMOR_BEGIN not in text:
        return data
    before, _, block = text.partition(ARMOR_BEGIN)
    body, found_end, after = block.partition(ARMOR_END)
    if before.strip() or after.strip():
        raise KeyRefused("the file holds more than one armoured block: one key per key file")
    if not found_end:
        raise KeyRefused("the key's ASCII armour has no end line")
    packets_b64, checksum = _armour_body(body.splitlines()[1:])
    try:
        keyring = base64.b64decode(packets_b64, validate=True)
    except ValueError:
        raise KeyRefused("the key's ASCII armour is not valid base64") from None
    if checksum is not None and checksum != base64.b64encode(_crc24(keyring)).decode("ascii"):
        raise KeyRefused("the key's ASCII armour checksum does not match its data")
    return keyring


def _armour_body(lines: list[str]) -> tuple[str, str | None]:
    """(the base64 text, the checksum line's value or None) of an armour's lines after BEGIN."""
    body = []
    checksum = None
    in_headers = True
    for line in lines:
        stripped = line.strip()
        if in_headers:  # "Version: ..." headers, then an empty line
            in_headers = bool(stripped) and ":" in stripped
            if in_headers or not stripped:
                continue
        if checksum is not None and stripped:
            raise KeyRefused("the key's ASCII armour has text after its checksum")
        if stripped.startswith("=") and len(stripped) == 5:
            checksum = stripped[1:]
        elif stripped:
            body.append(stripped)
    return "".join(body), checksum


def _crc24(data: bytes) -> bytes:
    """The OpenPGP armour checksum (RFC 4880 6.1), three bytes."""
    crc = 0xB704CE
    for byte in data:
        crc ^= byte << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return (crc & 0xFFFFFF).to_bytes(3, "big")


def armor(keyring: bytes) -> bytes:
    """A binary keyring in a fresh ASCII armour: no headers, 64 columns, its checksum."""
    text = base64.b64encode(keyring).decode("ascii")
    lines = [text[at : at + 64] for at in range(0, len(text), 64)]
    checksum = base64.b64encode(_crc24(keyring)).decode("ascii")
    return "\n".join([ARMOR_BEGIN, "", *lines, "=" + checksum, ARMOR_END, ""]).encode("ascii")


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


def checked_key(data: bytes, pinned: str | None) -> bytes:
    """The binary keyring, when ``data`` is exactly one key: the pinned one (any one if None)."""
    keyring = dearmor(data)
    found = primary_fingerprints(keyring)
    if pinned is None:
        if len(found) != 1:
            shown = ", ".join(found) or "no key"
            raise KeyRefused(f"the file must hold exactly one key; it holds {shown}")
        return keyring
    want = pinned.replace(" ", "").upper()
    if found != [want]:
        shown = ", ".join(found) or "no key"
        raise KeyRefused(f"the key is not the pinned one: expected {want}, the file holds {shown}")
    return keyring


def stored_form(keyring: bytes, binary: bool) -> bytes:
    """What is written for a checked key: the binary keyring, or the same packets armoured."""
    return keyring if binary else armor(keyring)


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--dearmor"):
        sys.stderr.write("usage: keycheck.py FILE FINGERPRINT|UNPINNED [--dearmor]\n")
        return 2
    path, pinned = Path(argv[0]), argv[1]
    try:
        keyring = checked_key(path.read_bytes(), None if pinned == UNPINNED else pinned)
    except KeyRefused as error:
        sys.stderr.write(f"{path}: {error}; it was not used\n")
        return 1
    checked = path.with_name(path.name + ".checked")
    checked.write_bytes(stored_form(keyring, binary=len(argv) == 3))
    checked.replace(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
