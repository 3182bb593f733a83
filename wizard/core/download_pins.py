"""What every download must be: the pinned checksums, key fingerprints, pip versions, torch wheel
hashes and base-image digests, read from ``download_pins.yaml`` and ``torch-hashes/`` beside this module.

Steps ask here for the pin of each file they download (``pin_for``); the runner's gpuwizard-fetch
and the exported scripts then check the file against it. A download with no entry is a
programming error (``Unpinned``), caught by the tests over every plan. Pure: reads only these
shipped data files, never the machine or the network.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpuwizard.core.version import Version

UNCONFIRMED = "UNCONFIRMED"
PYPI_INDEX = "https://pypi.org/simple"
_HEX64 = re.compile(r"[0-9a-f]{64}")
_FINGERPRINT = re.compile(r"[0-9A-F]{40}|[0-9A-F]{64}")


class Unpinned(LookupError):
    """A download gpuwizard's data has no entry for: add one to download_pins.yaml, with its source."""


class PinsError(ValueError):
    """download_pins.yaml or a torch hashes file is malformed; the message names the entry."""


@dataclass(frozen=True)
class Pin:
    """One file (or one key, served under several repositories) and what it must be."""

    url: str
    """The URL; ``{repo}`` and ``{arch}`` stand for NVIDIA's repository and architecture names."""
    source: str
    date: str
    sha256: str | None = None
    fingerprint: str | None = None
    """A key's primary-key fingerprint, upper-case hex without spaces."""
    arch: str | None = None
    repos: tuple[str, ...] = ()
    file: str | None = None
    status: str = "confirmed"

    @property
    def confirmed(self) -> bool:
        return self.status != UNCONFIRMED and bool(self.sha256 or self.fingerprint)

    def matches(self, url: str, arch: str | None) -> bool:
        if self.arch is not None and arch != self.arch:
            return False
        if "{" not in self.url:
            return url == self.url
        pattern = re.escape(self.url).replace(r"\{repo\}", "(?P<repo>[^/]+)")
        match = re.fullmatch(pattern.replace(r"\{arch\}", "[^/]+"), url)
        return match is not None and (not self.repos or match.group("repo") in self.repos)


@dataclass(frozen=True)
class PipPin:
    version: str
    python: str
    """The oldest Python this pip supports."""
    sha256: str
    source: str
    date: str


@dataclass(frozen=True)
class TorchWheels:
    """The hashes file of one torch set: pip's requirements text, and each Linux wheel's name."""

    version: str
    variant: str
    text: str
    wheels: dict[tuple[str, str, str], str]
    """(package, python tag like cp312, arch) -> wheel file name."""
    sha256: dict[str, str]
    """Wheel file name -> its SHA-256."""
    pins: dict[str, str]
    """Package -> the version its requirement line pins ("torchvision" -> "0.29.1")."""

    def wheel(self, package: str, python: str, arch: str) -> str | None:
        return self.wheels.get((package, "cp" + python.replace(".", ""), arch))

    def requirements_for(self, packages: tuple[str, ...], python: str, arch: str) -> str | None:
        """The hashes file one environment needs: each package's one wheel for this Python and
        CPU, with its SHA-256, in the file's own form. A few hundred bytes, where the whole file
        (every Python, both CPUs) is about 6 KB: deploy.sh carries it, and cloud-init's user-data
        must fit 16 KiB. None when a package has no wheel here."""
        names = [self.wheel(package, python, arch) for package in packages]
        if None in names or any(package not in self.pins for package in packages):
            return None
        lines = [
            f"# torch {self.version} ({self.variant}) for CPython {python} on {arch}: the SHA-256",
            "# of each wheel, from gpuwizard's wizard/core/torch-hashes (PyPI's PEP 691 JSON).",
            *(f"# wheel {name} sha256:{self.sha256[name]}" for name in names if name),
            *(
                f"{package}=={self.pins[package]} --hash=sha256:{self.sha256[name]}"
                for package, name in zip(packages, names, strict=True)
                if name
            ),
        ]
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Pins:
    downloads: tuple[Pin, ...]
    pips: tuple[PipPin, ...]
    image_digests: dict[str, str]
    images_unconfirmed: str


def data_dir() -> Path:
    return Path(__file__).parent


def _pin(entry: dict[str, Any], where: str) -> Pin:
    known = set(Pin.__dataclass_fields__)
    unknown = set(entry) - known
    if unknown:
        raise PinsError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    pin = Pin(**{**entry, "repos": tuple(entry.get("repos", ()))})
    if not pin.source or not pin.date:
        raise PinsError(f"{where}: every pin needs its source and date")
    if pin.sha256 is not None and not _HEX64.fullmatch(pin.sha256):
        raise PinsError(f"{where}: sha256 must be 64 lower-case hex digits")
    if pin.fingerprint is not None and not _FINGERPRINT.fullmatch(pin.fingerprint):
        raise PinsError(f"{where}: fingerprint must be 40 or 64 upper-case hex digits")
    if not pin.confirmed and pin.status != UNCONFIRMED:
        raise PinsError(f"{where}: no sha256 or fingerprint: mark it status: UNCONFIRMED")
    return pin


@functools.cache
def load_pins() -> Pins:
    data = yaml.safe_load((data_dir() / "download_pins.yaml").read_text(encoding="utf-8"))
    downloads = tuple(_pin(e, f"downloads[{i}]") for i, e in enumerate(data["downloads"]))
    pips = tuple(PipPin(**e) for e in data["pip"])
    images = data["images"]
    return Pins(downloads, pips, dict(images["digests"] or {}), str(images["unconfirmed_reason"]))


def pin_for(url: str, arch: str | None = None) -> Pin:
    """The pin of the file at ``url`` (for this CPU architecture, where files differ by one)."""
    for pin in load_pins().downloads:
        if pin.matches(url, arch):
            return pin
    raise Unpinned(
        f"no pin for {url}{f' ({arch})' if arch else ''} in gpuwizard's download_pins.yaml"
    )


def pip_for(python: str) -> PipPin:
    """The newest pinned pip that runs on this Python."""
    for pip in load_pins().pips:
        if Version.parse(python) >= Version.parse(pip.python):
            return pip
    raise Unpinned(f"no pinned pip runs on Python {python}")


def image_digest(image: str) -> str | None:
    """The pinned ``sha256:...`` digest of an image tag, or None when it is UNCONFIRMED."""
    return load_pins().image_digests.get(image)


_PINNED = re.compile(r"^([A-Za-z0-9_.-]+)==(\S+)", re.MULTILINE)
_WHEEL_LINE = re.compile(r"# wheel (?P<file>\S+\.whl) sha256:(?P<sha>[0-9a-f]{64})")


@functools.cache
def torch_wheels(version: str, variant: str) -> TorchWheels | None:
    """The hashes file of a torch set, when gpuwizard has one (PyPI's default build only)."""
    path = data_dir() / "torch-hashes" / f"torch-{version}-{variant}.txt"
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    required = {
        part.removeprefix("--hash=")
        for line in text.splitlines()
        if not line.startswith("#")
        for part in line.split()
        if part.startswith("--hash=sha256:")
    }
    wheels: dict[tuple[str, str, str], str] = {}
    for match in _WHEEL_LINE.finditer(text):
        name = match.group("file")
        package, _, python, abi, platform = name.removesuffix(".whl").split("-")
        if f"sha256:{match.group('sha')}" not in required:
            raise PinsError(f"{path.name}: {name}'s hash is not in a requirement line")
        if abi == python:  # not a free-threaded (cp314t) build: the envs gpuwizard makes
            arch = "aarch64" if platform.endswith("aarch64") else "x86_64"
            wheels[(package, python, arch)] = name
    pins = dict(_PINNED.findall(text))
    hashes = {m.group("file"): m.group("sha") for m in _WHEEL_LINE.finditer(text)}
    return TorchWheels(version, variant, text, wheels, hashes, pins)
