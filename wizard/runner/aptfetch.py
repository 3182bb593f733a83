"""``gpuwizard-apt-fetch``: put what an ``apt-get install`` will download into apt's cache, now.

    python -I -m gpuwizard.runner.aptfetch [--no-install-recommends] [--archives DIR] PKG...

apt itself says what it would download and each file's SHA-256 (``apt-get --print-uris``, with
``Acquire::ForceHash=SHA256``; those hashes come from the index apt checked against the
repository's signature). Each file is downloaded beside apt's cache, checked against that hash
and only then moved in: apt installs a cached file of the right size without checking its hash
again (measured in tests/chroot/test_fetch_ahead.py), so nothing unchecked may land there. apt
does not list what it already has, so a second run fetches nothing.

Why not ``apt-get --download-only``: it takes the dpkg frontend lock, like an install does. Run
beside a step that installs (the driver's DKMS build), it would wait for it, or make it wait.
``--print-uris`` reads the package lists and takes no lock. apt's proxy (``Acquire::http::Proxy``)
is used as apt would use it. Exit status 1 when apt cannot name the packages or a file cannot be
fetched or checked; the step then downloads what is missing itself, as it always did.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from gpuwizard.core.ops import APT_ENV
from gpuwizard.runner.fetch import staged

ARCHIVES = Path("/var/cache/apt/archives")
CHUNK = 1 << 20
PROGRESS_S = 10.0
"""A line on a large file's progress this often: the runner waits for a fetch that shows progress."""
URI_LINE = re.compile(r"^'(?P<uri>[^']+)' (?P<name>\S+) (?P<size>\d+) (?P<hash>\S+)$")
SCHEMES = ("http://", "https://")


@dataclass(frozen=True)
class Wanted:
    uri: str
    name: str
    size: int
    sha256: str | None
    """None: apt gave no SHA-256 for it (an unsigned local repository); it is left to apt."""


class AptFetchError(RuntimeError):
    pass


def parse_uris(text: str) -> list[Wanted]:
    """``apt-get --print-uris`` lines: ``'URI' FILE SIZE SHA256:HEX`` (other lines ignored)."""
    found = []
    for line in text.splitlines():
        match = URI_LINE.match(line.strip())
        if match is None:
            continue
        kind, _, value = match["hash"].partition(":")
        sha256 = value.lower() if kind.upper() == "SHA256" else None
        found.append(Wanted(match["uri"], match["name"], int(match["size"]), sha256))
    return found


def print_uris_argv(packages: list[str], recommends: bool) -> list[str]:
    """What apt would download for ``apt-get install PACKAGES``, with SHA-256s; takes no lock."""
    argv = ["apt-get", "-qq", "--print-uris", "-o", "Acquire::ForceHash=SHA256", "-y", "install"]
    return [*argv, *([] if recommends else ["--no-install-recommends"]), *packages]


def read_uris(returncode: int, stdout: str, stderr: str) -> list[Wanted]:
    if returncode != 0:
        said = " ".join(line for line in stderr.splitlines() if line.startswith("E:"))
        raise AptFetchError(f"apt cannot name them yet: {said or stderr.strip()[-300:]}")
    return parse_uris(stdout)


def print_uris(packages: list[str], recommends: bool) -> list[Wanted]:
    argv = print_uris_argv(packages, recommends)
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **APT_ENV})
    return read_uris(done.returncode, done.stdout, done.stderr)


def apt_proxies() -> dict[str, str]:
    """apt's own proxy settings, for the same mirrors apt would reach through them."""
    done = subprocess.run(
        ["apt-config", "shell", "HTTP", "Acquire::http::Proxy", "HTTPS", "Acquire::https::Proxy"],
        capture_output=True,
        text=True,
    )
    proxies = {}
    for line in done.stdout.splitlines():
        name, _, value = line.partition("=")
        value = value.strip().strip("'\"")
        if value and value.upper() != "DIRECT":
            proxies[name.lower()] = value
    return proxies


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_one(wanted: Wanted, archives: Path, opener: urllib.request.OpenerDirector) -> int:
    """Download one file into ``archives``, checked; returns the bytes downloaded."""
    destination = archives / wanted.name
    if (
        destination.is_file()
        and destination.stat().st_size == wanted.size
        and sha256_of(destination) == wanted.sha256
    ):
        return 0
    digest, size, said = hashlib.sha256(), 0, time.monotonic()
    with staged(destination) as (out, part):
        with opener.open(wanted.uri, timeout=120) as response:
            while chunk := response.read(CHUNK):
                digest.update(chunk)
                out.write(chunk)
                size += len(chunk)
                if time.monotonic() - said > PROGRESS_S:  # a large file: progress to the log
                    said = time.monotonic()
                    sys.stdout.write(
                        f"{wanted.name}: {size_text(size)} of {size_text(wanted.size)}\n"
                    )
                    sys.stdout.flush()
        if size != wanted.size or digest.hexdigest() != wanted.sha256:
            raise AptFetchError(
                f"{wanted.name}: got {size} bytes, SHA-256 {digest.hexdigest()}; apt's index "
                f"says {wanted.size} bytes, {wanted.sha256}: deleted, not used"
            )
        out.flush()
        os.fsync(out.fileno())
        part.chmod(0o644)
        part.replace(destination)
    return size


def size_text(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size / 1e3:.0f} kB"


def fetch_all(wanted: list[Wanted], archives: Path, opener: urllib.request.OpenerDirector) -> int:
    """Fetch every file apt named; returns how many failed (each said on stderr)."""
    failed, fetched, total = 0, 0, 0
    for item in wanted:
        if not item.uri.startswith(SCHEMES) or item.sha256 is None:
            sys.stdout.write(f"left to apt: {item.name} (no SHA-256 from apt, or not http)\n")
            continue
        try:
            got = fetch_one(item, archives, opener)
        except (AptFetchError, OSError) as error:
            reason = error.reason if isinstance(error, urllib.error.URLError) else error
            sys.stderr.write(f"gpuwizard-apt-fetch: {item.name}: {reason}\n")
            failed += 1
            continue
        fetched += 1 if got else 0
        total += got
        said = size_text(got) if got else "already in apt's cache"
        sys.stdout.write(f"{item.name}: {said}, SHA-256 checked against apt's index\n")
    sys.stdout.write(
        f"{fetched} of {len(wanted)} files fetched ahead ({size_text(total)}) into {archives}\n"
    )
    return failed


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="gpuwizard-apt-fetch")
    parser.add_argument("--no-install-recommends", dest="recommends", action="store_false")
    parser.add_argument("--archives", type=Path, default=ARCHIVES)
    parser.add_argument("packages", nargs="+")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    # Stopped mid-file: the partial file beside apt's cache is removed on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        wanted = print_uris(args.packages, args.recommends)
        args.archives.mkdir(parents=True, exist_ok=True)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler(apt_proxies() or None))
        failed = fetch_all(wanted, args.archives, opener)
    except (AptFetchError, OSError) as error:
        sys.stderr.write(f"gpuwizard-apt-fetch: {error}\n")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
