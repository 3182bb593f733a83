"""``gpuwizard-fetch``: download one file safely, for the install steps.

    python -I -m gpuwizard.runner.fetch URL DEST (--sha256 HEX | --fingerprint FPR | --unpinned)
                                        [--member NAME] [--dearmor | --armor]

Every download is checked against what gpuwizard's data pins (``wizard/core/download_pins.py``), never
against a checksum from the same server: ``--sha256`` for a file, ``--fingerprint`` for a
repository key (exactly one primary key, that one; ``wizard/runner/keycheck.py``).
``--unpinned`` is for the files download_pins.yaml marks UNCONFIRMED: it is downloaded over HTTPS alone,
with a warning; an UNCONFIRMED key (``--unpinned`` with ``--dearmor`` or ``--armor``) must still
be exactly one primary key. Only ``https://`` is fetched, and a redirect that leaves https is refused. The
file streams into a private temporary file beside DEST (hashed as it arrives) and is moved into
place only when complete and checked; otherwise it is deleted and the exit status is 1, so
nothing downstream ever runs a truncated or altered download (no ``curl | sh``). Files for
gpuwizard's download folder land in a folder only root can enter (0700).

``pypi:NAME==VERSION`` as URL picks this machine's manylinux wheel from the configured index
(PEP 691, PIP_INDEX_URL honoured); ``--member`` extracts one file from a wheel. A key is never
saved as downloaded: the checked key alone is, as the binary keyring apt's ``signed-by``
expects (``--dearmor``) or in a fresh ASCII armour for dnf's ``gpgkey`` (``--armor``, the
default for ``--fingerprint``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit

from gpuwizard.core.paths import DOWNLOADS_DIR
from gpuwizard.runner.files import make_private_dir
from gpuwizard.runner.httpsget import HttpsOnly
from gpuwizard.runner.keycheck import KeyRefused, checked_key, stored_form

CHUNK = 1 << 20


class FetchError(RuntimeError):
    """Why the download was refused; printed as one line."""


def opener() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(HttpsOnly)


def require_https(url: str) -> None:
    if urlsplit(url).scheme != "https":
        raise FetchError(f"{url} is not an https URL: gpuwizard downloads over https only")


def resolve_pypi(spec: str) -> str:
    """pypi:uv==0.13.9 -> the URL of this machine's manylinux wheel of that release."""
    name, _, version = spec.removeprefix("pypi:").partition("==")
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
    require_https(index)
    request = urllib.request.Request(
        f"{index}/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with opener().open(request, timeout=60) as response:
        files = json.load(response)["files"]
    tag = f"manylinux_2_17_{platform.machine()}"
    for entry in files:
        filename = entry["filename"]
        if filename.startswith(f"{name}-{version}-") and tag in filename:
            return str(entry["url"])
    raise FetchError(f"the index has no {tag} wheel of {name} {version}")


def stream(url: str, out: BinaryIO) -> str:
    """Write the body of ``url`` to ``out``; its SHA-256 (hex)."""
    require_https(url)
    digest = hashlib.sha256()
    size = 0
    with opener().open(url, timeout=120) as response:
        expected = response.headers.get("Content-Length")
        while chunk := response.read(CHUNK):
            digest.update(chunk)
            out.write(chunk)
            size += len(chunk)
    if expected is not None and size != int(expected):
        raise FetchError(f"download ended early: {size} of {expected} bytes")
    return digest.hexdigest()


def check_sha256(got: str, want: str) -> None:
    if got.lower() != want.lower():
        raise FetchError(
            f"SHA-256 mismatch: got {got}, pinned {want}; the file was deleted and not used"
        )


@contextlib.contextmanager
def staged(destination: Path) -> Iterator[tuple[BinaryIO, Path]]:
    """A private temporary file beside ``destination`` (0600, a new name): removed unless kept."""
    folder = destination.parent
    if str(folder) == DOWNLOADS_DIR:
        make_private_dir(folder)  # what is downloaded there is run from there: root only
    else:
        folder.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=folder, prefix=f".{destination.name}.", suffix=".part")
    part = Path(name)
    try:
        with os.fdopen(fd, "w+b") as handle:
            yield handle, part
    finally:
        part.unlink(missing_ok=True)


def already_here(destination: Path, check: Check, member: str | None) -> bool:
    """A whole file already at ``destination`` that matches its pinned SHA-256 (fetched ahead,
    or by an earlier run): it is kept, not downloaded again."""
    if not check.sha256 or member or check.key or not destination.is_file():
        return False
    digest = hashlib.sha256()
    with destination.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest() == check.sha256.lower()


def fetch(url: str, destination: Path, check: Check, member: str | None) -> int:
    if already_here(destination, check, member):
        sys.stdout.write(f"kept {destination}: already here ({check.said()})\n")
        return 0
    source = resolve_pypi(url) if url.startswith("pypi:") else url
    sys.stdout.write(f"fetching {source}\n")
    with staged(destination) as (handle, part):
        got = stream(source, handle)
        if check.sha256:
            check_sha256(got, check.sha256)
        handle.flush()
        if member or check.key:
            handle.seek(0)
            data = handle.read()
            if member:
                with zipfile.ZipFile(handle) as archive:
                    data = archive.read(member)
            if check.key:  # the checked key alone, never the file as it came
                data = stored_form(checked_key(data, check.fingerprint), check.key == "binary")
            handle.seek(0)
            handle.truncate()
            handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
        part.chmod(0o755 if member else 0o644)
        part.replace(destination)
    sys.stdout.write(f"saved {destination} ({check.said()})\n")
    if check.unpinned:
        sys.stderr.write(check.warning(source))
    return 0


class Check:
    """How the file is checked: its pinned SHA-256, a key's fingerprint, or nothing (UNCONFIRMED);
    and for a key, the form it is stored in ("binary" or "armored", None for other files)."""

    def __init__(
        self, sha256: str | None, fingerprint: str | None, unpinned: bool, key: str | None = None
    ) -> None:
        if [bool(sha256), bool(fingerprint), unpinned].count(True) != 1:
            raise FetchError("give exactly one of --sha256, --fingerprint and --unpinned")
        if key and sha256:
            raise FetchError("--dearmor and --armor are for keys, which are not checked by SHA-256")
        self.sha256, self.fingerprint, self.unpinned = sha256, fingerprint, unpinned
        self.key = key or ("armored" if fingerprint else None)

    def said(self) -> str:
        if self.sha256:
            return "SHA-256 verified against gpuwizard's pin"
        if self.fingerprint:
            return f"key fingerprint {self.fingerprint} verified, the key alone kept"
        if self.key:
            return "NOT verified: no pinned fingerprint (UNCONFIRMED); one key, kept alone"
        return "NOT verified: no pinned checksum (UNCONFIRMED)"

    @staticmethod
    def warning(url: str) -> str:
        host = urlsplit(url).hostname or url
        return (
            f"gpuwizard-fetch: WARNING: {url} has no pinned checksum in gpuwizard's data "
            f"(UNCONFIRMED); it was trusted on HTTPS to {host} alone\n"
        )


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, Check]:
    """The arguments and the check they ask for. Raises FetchError for a combination refused
    (the simulation's stand-in refuses exactly what this tool refuses)."""
    parser = argparse.ArgumentParser(
        prog="gpuwizard-fetch", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("url")
    parser.add_argument("destination", type=Path)
    parser.add_argument("--sha256")
    parser.add_argument("--fingerprint")
    parser.add_argument("--unpinned", action="store_true")
    parser.add_argument("--member")
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--dearmor", dest="key", action="store_const", const="binary")
    form.add_argument("--armor", dest="key", action="store_const", const="armored")
    args = parser.parse_args(argv)
    return args, Check(args.sha256, args.fingerprint, args.unpinned, args.key)


def main(argv: list[str] | None = None) -> int:
    try:
        args, check = parse(argv)
        return fetch(args.url, args.destination, check, args.member)
    except (FetchError, KeyRefused, OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
        reason = error.reason if isinstance(error, urllib.error.URLError) else error
        sys.stderr.write(f"gpuwizard-fetch: {reason}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
