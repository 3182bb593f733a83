"""Real Debian roots for the chroot tiers: built with mmdebstrap, cached as tarballs, unpacked.

A root is what a Debian cloud image holds before anyone touched it: minbase plus the cloud
kernel, systemd, kmod, initramfs-tools, python3 and ca-certificates, with apt's sources naming
``main`` only (suite, -updates, -security). The mirrors are the ones this machine's own apt
sources use, never a hard-coded host. A built root is kept as ``<suite>-cloud-<date>.tar.zst``
(one per suite and UTC day, older ones of that suite removed) under a cache folder outside the
clone where one can be written (GPUWIZARD_CHROOT_CACHE, else the user's cache folder), else in
the clone's ``.cache/``; building takes about a minute, unpacking about 7 s.

mmdebstrap is used from the system when installed; otherwise its .deb is downloaded with
``apt-get download`` and unpacked into the cache folder (it needs only perl, apt and dpkg, which
every Debian host has): the tiers install what they need themselves and never change this host.
Never run anything from here but as root: mmdebstrap's root mode and chroot need it.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = (
    "ca-certificates", "python3", "initramfs-tools", "linux-image-cloud-amd64", "systemd", "kmod",
)  # fmt: skip
APT_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))
BUILD_TIMEOUT_S = 900


class RootUnavailable(RuntimeError):
    """No root can be built here; the message says why (not root, no apt, no mirror)."""


@dataclass(frozen=True)
class Mirrors:
    debian: str
    """e.g. http://deb.debian.org/debian, as this machine's apt sources name it."""
    security: str


def _source_uris() -> list[str]:
    """Every URI in this machine's apt sources, one-line and deb822 alike, in order."""
    files: list[Path] = []
    for place in APT_SOURCES:
        if place.is_dir():
            files += sorted(p for p in place.iterdir() if p.suffix in (".list", ".sources"))
        elif place.is_file():
            files.append(place)
    uris: list[str] = []
    for file in files:
        for line in file.read_text(errors="replace").splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("deb "):
                words = re.sub(r"\[[^\]]*\]", " ", line).split()
                uris += words[1:2]
            elif line.lower().startswith("uris:"):
                uris += line.split(":", 1)[1].split()
    return uris


def mirrors() -> Mirrors:
    """The Debian and Debian-security mirrors this machine's apt already uses."""
    uris = [u.rstrip("/") for u in _source_uris() if u.startswith(("http://", "https://"))]
    security = next((u for u in uris if u.endswith("-security")), None)
    debian = next((u for u in uris if u.endswith("/debian")), None)
    if debian is None or security is None:
        raise RootUnavailable(
            f"this machine's apt sources name no Debian and Debian-security mirror ({uris})"
        )
    return Mirrors(debian, security)


def cache_dir() -> Path:
    """Where built roots are kept: outside the clone when possible, else in the clone."""
    wanted = os.environ.get("GPUWIZARD_CHROOT_CACHE")
    candidates = [Path(wanted)] if wanted else []
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    candidates += [Path(base) / "gpuwizard" / "chroot", REPO / ".cache" / "chroot"]
    for folder in candidates:
        with contextlib.suppress(OSError):
            folder.mkdir(parents=True, exist_ok=True)
            if os.access(folder, os.W_OK):
                return folder
    raise RootUnavailable(f"no writable cache folder among {[str(c) for c in candidates]}")


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """One builder at a time per cache folder (the quick and heavy tiers may start together)."""
    with (folder / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def mmdebstrap(folder: Path) -> list[str]:
    """The mmdebstrap command: the system's, else one unpacked from its .deb into ``folder``."""
    found = shutil.which("mmdebstrap")
    if found:
        return [found]
    unpacked = folder / "mmdebstrap" / "usr" / "bin" / "mmdebstrap"
    if unpacked.exists():
        return ["perl", str(unpacked)]
    work = folder / "mmdebstrap-download"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    download = subprocess.run(
        ["apt-get", "download", "mmdebstrap"], cwd=work, capture_output=True, text=True, check=False
    )
    if download.returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, check=False)
        download = subprocess.run(
            ["apt-get", "download", "mmdebstrap"],
            cwd=work,
            capture_output=True,
            text=True,
            check=False,
        )
    debs = list(work.glob("mmdebstrap_*.deb"))
    if download.returncode != 0 or not debs:
        raise RootUnavailable(f"cannot download mmdebstrap: {download.stderr.strip()[-300:]}")
    subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(folder / "mmdebstrap")], check=True)
    shutil.rmtree(work)
    return ["perl", str(unpacked)]


def today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")


def tarball(suite: str, folder: Path | None = None) -> Path:
    """The cached root of ``suite`` for today, built first if there is none."""
    if os.geteuid() != 0:
        raise RootUnavailable("building a Debian root needs root (mmdebstrap root mode, chroot)")
    folder = folder or cache_dir()
    target = folder / f"{suite}-cloud-{today()}.tar.zst"
    with locked(folder):
        if not target.exists():
            build(suite, target, folder)
            for old in folder.glob(f"{suite}-cloud-*.tar.zst"):
                if old != target:
                    old.unlink()
    return target


def build(suite: str, target: Path, folder: Path) -> None:
    found = mirrors()
    sources = [
        f"deb {found.debian} {suite} main",
        f"deb {found.debian} {suite}-updates main",
        f"deb {found.security} {suite}-security main",
    ]
    partial = target.with_suffix(".partial.tar.zst")
    command = [
        *mmdebstrap(folder), "--quiet", "--variant=minbase", "--components=main",
        f"--include={','.join(PACKAGES)}", suite, str(partial), *sources,
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise RootUnavailable(f"mmdebstrap {suite} failed: {(done.stderr or done.stdout)[-600:]}")
    partial.replace(target)
    BUILD_TIMES[suite] = time.monotonic() - started


BUILD_TIMES: dict[str, float] = {}
"""Seconds each root took to build in this process (for the tiers' timing report)."""


def unpack(archive: Path, destination: Path) -> Path:
    """A fresh root from the tarball (owners, modes and device nodes kept)."""
    destination.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["tar", "--zstd", "-xpf", str(archive), "-C", str(destination)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return destination
