"""Download one URL over https only: a redirect that leaves https is refused.

    python3 -I httpsget.py URL DEST [SHA256]

The file streams into a private temporary file beside DEST and is moved into place (0644) only
when it is complete and, when SHA256 is given, has that digest; otherwise it is deleted and the
exit status is 1, with one line on stderr. The Ansible playbook carries this file's text and
runs it on each server instead of ``get_url``, which follows a redirect to plain http; so it
uses the standard library only and runs on Python 3.8 (Ubuntu 20.04's). gpuwizard-fetch uses
its ``HttpsOnly`` too, so both refuse the same redirects. It never runs what it downloads.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import urllib.error
import urllib.request
from http.client import HTTPMessage
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

CHUNK = 1 << 20


class RedirectRefused(ValueError):
    """A redirect away from https; the message names both addresses."""


class HttpsOnly(urllib.request.HTTPRedirectHandler):
    """Follows redirects only to https: a downgrade to http (or to file:, ftp:) is refused."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        if urlsplit(newurl).scheme != "https":
            raise RedirectRefused(
                f"{req.full_url} redirects to {newurl}, which is not https: refused"
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def download(url: str, dest: str, sha256: str | None) -> None:
    """``url`` into ``dest``, atomically; ValueError or OSError says why it was not kept."""
    if urlsplit(url).scheme != "https":
        raise ValueError(f"{url} is not an https URL: only https is downloaded")
    fd, name = tempfile.mkstemp(dir=Path(dest).absolute().parent, prefix=".gpuwizard-tmp.")
    part = Path(name)
    try:
        digest, size = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as out:
            response = urllib.request.build_opener(HttpsOnly).open(url, timeout=120)
            with response:
                expected = response.headers.get("Content-Length")
                chunk = response.read(CHUNK)
                while chunk:
                    digest.update(chunk)
                    out.write(chunk)
                    size += len(chunk)
                    chunk = response.read(CHUNK)
        if expected is not None and size != int(expected):
            raise ValueError(f"the download of {url} ended early: {size} of {expected} bytes")
        if sha256 is not None and digest.hexdigest() != sha256.lower():
            raise ValueError(
                f"SHA-256 mismatch for {url}: got {digest.hexdigest()}, pinned {sha256}; deleted"
            )
        part.chmod(0o644)
        part.replace(dest)
    finally:
        part.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        sys.stderr.write("usage: httpsget.py URL DEST [SHA256]\n")
        return 2
    try:
        download(argv[0], argv[1], argv[2] if len(argv) == 3 else None)
    except urllib.error.URLError as error:
        sys.stderr.write(f"{argv[0]}: {error.reason}\n")
        return 1
    except (ValueError, OSError) as error:
        sys.stderr.write(f"{argv[0]}: {error}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
