"""Read NVIDIA's lists of supported GPUs for tools/check_compat.py: one per kernel-module flavour.

* open: README.md's "Compatible GPUs" table at every release tag of NVIDIA's
  open-gpu-kernel-modules repository, read with ``git show TAG:README.md`` from a clone (made
  with ``--filter=blob:none`` when none is given; a README blob is fetched when it is read).
* proprietary: Appendix A of the driver's own README (README.txt.gz), from every driver package
  version Ubuntu's and Debian's archives carry (``nvidia-driver-<branch>[-server]``,
  ``nvidia-driver``, ``nvidia-tesla-<branch>-driver``). apt runs with a configuration and state
  of its own under a scratch folder (the host's apt is never touched) and only downloads:
  ``apt-get download`` one package per driver release, whose README is read and which is then
  deleted. Nothing is installed or run from these packages, so their archives are read with
  ``trusted=yes`` (the host need not hold Ubuntu's keyring); a transitional package without a
  README is skipped.

Only the device ids the table asks about are kept (``wizard/recommend/gpu_lists.py``).
"""

from __future__ import annotations

import gzip
import io
import re
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from gpuwizard.core.version import Version
from gpuwizard.recommend.gpu_lists import (
    FlavourLists,
    appendix_ids,
    open_readme_ids,
    readme_version,
)

OPEN_REPOSITORY = "https://github.com/NVIDIA/open-gpu-kernel-modules"
OPEN_SOURCE = f"{OPEN_REPOSITORY}: README.md 'Compatible GPUs' at every release tag"
PROPRIETARY_SOURCE = (
    "NVIDIA driver README, Appendix A 'Supported NVIDIA GPU Products' (current GPUs), from the "
    "driver packages of Ubuntu's and Debian's archives"
)
UBUNTU = "http://archive.ubuntu.com/ubuntu"
DEBIAN = "http://deb.debian.org/debian"
UBUNTU_SUITES = ("focal", "jammy", "noble", "resolute")
DEBIAN_SUITES = ("bookworm", "bookworm-updates", "trixie", "trixie-updates", "sid")
_TAG = re.compile(r"^\d+\.\d+(\.\d+)?$")
_DRIVER_PACKAGE = r"^nvidia-(driver(-[0-9]+(-server)?)?|tesla-[0-9]+-driver)$"

Listed = dict[str, frozenset[str]]
"""release -> the device ids its list names."""


class ListsFailed(RuntimeError):
    """A list could not be read (git, apt or the network failed)."""


def _run(argv: Sequence[str], **env: str) -> str:
    done = subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C", **env},
    )
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()
        raise ListsFailed(f"{' '.join(argv[:3])}: {tail[-1] if tail else done.returncode}")
    return done.stdout


def clone_open_modules(folder: Path) -> Path:
    """A clone of the repository with its tags and no file contents yet."""
    _run(["git", "clone", "--quiet", "--bare", "--filter=blob:none", OPEN_REPOSITORY, str(folder)])
    return folder


def read_open(git_dir: Path) -> tuple[FlavourLists, Listed]:
    """Every release tag's README list (a tag without the table, before 515, lists nothing)."""
    tags = [t for t in _run(["git", "--git-dir", str(git_dir), "tag"]).split() if _TAG.match(t)]
    listed: Listed = {}
    origin: dict[str, str] = {}
    for tag in sorted(tags, key=Version.parse):
        text = _run(["git", "--git-dir", str(git_dir), "show", f"{tag}:README.md"])
        commit = _run(["git", "--git-dir", str(git_dir), "rev-list", "-n1", tag]).strip()
        listed[tag] = open_readme_ids(text)
        origin[tag] = f"tag {tag} ({commit[:12]})"
    releases = tuple(t for t in listed if listed[t])
    return FlavourLists(OPEN_SOURCE, releases, {r: origin[r] for r in releases}), listed


class PrivateApt:
    """apt with its own sources, lists and cache under one folder; it only downloads."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        for sub in ("etc/apt.conf.d", "etc/preferences.d", "lists/partial", "archives/partial"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        (folder / "status").touch()
        lines = [
            f"deb [trusted=yes] {UBUNTU} {suite}{pocket} main restricted multiverse"
            for suite in UBUNTU_SUITES
            for pocket in ("", "-updates", "-security")
        ] + [f"deb [trusted=yes] {DEBIAN} {suite} non-free contrib" for suite in DEBIAN_SUITES]
        (folder / "etc/sources.list").write_text("\n".join(lines) + "\n", encoding="utf-8")
        config = {
            "Dir::Etc": folder / "etc",
            "Dir::State": folder,
            "Dir::State::Lists": folder / "lists",
            "Dir::State::status": folder / "status",
            "Dir::Cache": folder,
            "Dir::Cache::Archives": folder / "archives",
        }
        settings = [f'{key} "{path}";' for key, path in config.items()]
        settings += ['APT::Architecture "amd64";', 'APT::Architectures "amd64";']
        settings += ['Acquire::Languages "none";', 'Acquire::Check-Valid-Until "false";']
        (folder / "apt.conf").write_text("\n".join(settings) + "\n", encoding="utf-8")

    def run(self, *args: str) -> str:
        return _run(["apt-get" if args[0] != "madison" else "apt-cache", *args], **self.env)

    @property
    def env(self) -> dict[str, str]:
        return {"APT_CONFIG": str(self.folder / "apt.conf")}

    def versions(self) -> list[tuple[str, str]]:
        """(package, package version) of every driver package any suite carries."""
        names = _run(["apt-cache", "pkgnames"], **self.env).split()
        drivers = sorted(n for n in names if re.match(_DRIVER_PACKAGE, n))
        out = _run(["apt-cache", "madison", *drivers], **self.env) if drivers else ""
        rows = [[part.strip() for part in line.split("|")] for line in out.splitlines()]
        return sorted({(r[0], r[1]) for r in rows if len(r) >= 3})


def upstream(package_version: str) -> str:
    """ "580.178.04-0ubuntu0.22.04.1" -> "580.178.04"; "440.82+really.440.64-0ubuntu6" -> "440.64"."""
    version = package_version.split(":")[-1].rsplit("-", 1)[0]
    return version.split("+really.")[-1]


def readme_of(deb: Path) -> str | None:
    """The driver README inside a package (its text), or None when it carries none."""
    raw = subprocess.run(
        ["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True, check=True, timeout=300
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(raw)) as archive:
        member = next((m for m in archive.getmembers() if m.name.endswith("/README.txt.gz")), None)
        handle = archive.extractfile(member) if member else None
        return gzip.decompress(handle.read()).decode("utf-8", "replace") if handle else None


def read_proprietary(folder: Path, wanted: Iterable[str] = ()) -> tuple[FlavourLists, Listed]:
    """Appendix A of one package per driver release the archives carry (all, or ``wanted``)."""
    apt = PrivateApt(folder)
    apt.run("-q", "update")
    listed: Listed = {}
    origin: dict[str, str] = {}
    only = set(wanted)
    for package, version in apt.versions():
        release = upstream(version)
        if release in listed or (only and release not in only):
            continue
        text = _download_readme(apt, package, version)
        if text is None or readme_version(text) != release:
            continue
        listed[release] = appendix_ids(text)
        origin[release] = f"{package} {version}"
    releases = tuple(sorted(listed, key=Version.parse))
    return FlavourLists(PROPRIETARY_SOURCE, releases, origin), listed


def _download_readme(apt: PrivateApt, package: str, version: str) -> str | None:
    with tempfile.TemporaryDirectory(dir=apt.folder) as scratch:
        done = subprocess.run(
            ["apt-get", "-q", "download", f"{package}={version}"],
            cwd=scratch,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C", **apt.env},
        )
        debs = list(Path(scratch).glob("*.deb"))
        if done.returncode != 0 or not debs:
            return None  # a version the archive's index names but its pool no longer has
        return readme_of(debs[0])
