"""One key per key file (issue 28): the key check the runner, deploy.sh and the playbook share.

A file with key A and then key B passed the check for A (only the first armoured block was
read) and was installed whole; dnf imports every key of a gpgkey file. Now the file must be
exactly one armoured block (or binary packets) holding exactly one primary key, and what is
installed is that checked key alone, never the file as it came.
"""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuwizard.runner.keycheck import (
    UNPINNED,
    KeyRefused,
    armor,
    checked_key,
    dearmor,
    main,
    primary_fingerprints,
)

KEYS = Path(__file__).parent / "keys"
KEY_A = (KEYS / "nvidia-docker-gpgkey.asc").read_bytes()
KEY_B = (KEYS / "test-key-b.asc").read_bytes()
A = "C95B321B61E88C1809C4F759DDCAE044F796ECB0"
B = "8F3DB4ABAC820E2204CB45B69629F5599FB2AD1A"


def test_each_test_key_is_one_primary_key() -> None:
    assert primary_fingerprints(dearmor(KEY_A)) == [A]
    assert primary_fingerprints(dearmor(KEY_B)) == [B]


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(KEY_A + KEY_B, id="key A's block, then key B's"),
        pytest.param(KEY_A + b"\n" + KEY_B, id="the two blocks apart"),
        pytest.param(KEY_A + b"a comment after the key\n", id="text after the block"),
        pytest.param(b"a comment\n" + KEY_A, id="text before the block"),
        pytest.param(dearmor(KEY_A) + dearmor(KEY_B), id="two binary keys"),
    ],
)
@pytest.mark.parametrize("pinned", [A, None], ids=["pinned", "UNCONFIRMED"])
def test_a_file_with_more_than_the_one_key_is_refused(data: bytes, pinned: str | None) -> None:
    with pytest.raises(KeyRefused):
        checked_key(data, pinned)


def test_a_damaged_armour_is_refused() -> None:
    lines = KEY_A.decode().splitlines()
    checksum = next(i for i, line in enumerate(lines) if line.startswith("="))
    lines[checksum] = "=AAAA"
    with pytest.raises(KeyRefused, match="checksum does not match"):
        checked_key("\n".join(lines).encode(), A)
    with pytest.raises(KeyRefused, match="no end line"):
        checked_key(KEY_A.replace(b"-----END PGP PUBLIC KEY BLOCK-----", b""), A)


def test_armour_round_trips_and_gpg_reads_it(tmp_path: Path) -> None:
    keyring = dearmor(KEY_A)
    assert dearmor(armor(keyring)) == keyring
    assert armor(keyring) == KEY_A, "NVIDIA's own file is in the canonical armour already"
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    done = subprocess.run(
        ["gpg", "--homedir", str(home), "--batch", "--import"],
        input=armor(dearmor(KEY_B)),
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert "imported: 1" in done.stderr.decode()


@given(st.binary(max_size=3000))
def test_the_armour_checksum_is_crc24_as_gpg_writes_it(data: bytes) -> None:
    text = armor(data).decode()
    checksum = next(line for line in text.splitlines() if line.startswith("="))
    assert len(base64.b64decode(checksum[1:])) == 3
    assert dearmor(text.encode()) == data


@pytest.mark.parametrize(
    ("args", "stored"),
    [
        pytest.param([A, "--dearmor"], lambda: dearmor(KEY_A), id="pinned, for apt"),
        pytest.param([A], lambda: armor(dearmor(KEY_A)), id="pinned, for dnf"),
        pytest.param([UNPINNED, "--dearmor"], lambda: dearmor(KEY_A), id="UNCONFIRMED, for apt"),
    ],
)
def test_the_command_replaces_the_file_by_the_checked_key_alone(
    tmp_path: Path, args: list[str], stored
) -> None:  # type: ignore[no-untyped-def]
    key = tmp_path / "key"
    key.write_bytes(KEY_A.replace(b"\n\n", b"\nComment: served with extras\n\n", 1))
    assert main([str(key), *args]) == 0
    assert key.read_bytes() == stored()


def test_the_command_refuses_in_one_line_and_leaves_the_file_unused(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_bytes(KEY_A + KEY_B)
    done = subprocess.run(
        [sys.executable, "-I", str(Path(sys.modules[main.__module__].__file__ or "")), str(key), A],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "one key per key file" in done.stderr
    assert key.read_bytes() == KEY_A + KEY_B, "refused: the caller deletes it"
