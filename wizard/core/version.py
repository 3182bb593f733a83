"""Dotted version numbers compared as numbers: "535.104.05" < "535.247.01", "12.10" > "12.9".

Versions stay strings everywhere they are stored; this type exists only to compare them.
A PyTorch CUDA build's name ("cu130") is read here too, once (``CudaVariant``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from functools import total_ordering

_DOTTED = re.compile(r"[0-9]{1,18}(\.[0-9]{1,18})*")
"""ASCII digits only (int() reads "٥" and "²" too), and never so many that int() refuses them."""


@total_ordering
@dataclass(frozen=True)
class Version:
    """A dotted version number, compared by its numbers (``text`` keeps how it was written)."""

    parts: tuple[int, ...]
    text: str

    @classmethod
    def parse(cls, text: str) -> Version:
        return _parse(text)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self.parts < other.parts

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self.parts == other.parts

    def __hash__(self) -> int:
        return hash(self.parts)

    def __str__(self) -> str:
        return self.text

    @property
    def major(self) -> int:
        return self.parts[0]

    @property
    def minor_text(self) -> str:
        """ "3.10.12" -> "3.10"."""
        return ".".join(str(p) for p in self.parts[:2])


@functools.lru_cache(maxsize=4096)  # the solver compares the same few hundred versions often
def _parse(text: str) -> Version:
    value = text.strip()
    if not _DOTTED.fullmatch(value):
        raise ValueError(f"not a dotted version number: {text!r}")
    return Version(tuple(int(p) for p in value.split(".")), value)


def is_version(text: str) -> bool:
    """A dotted version number and nothing else: no space or line break around it."""
    return _DOTTED.fullmatch(text) is not None


def at_least(version: str, floor: str) -> bool:
    """``version >= floor``, where a floor of "580" means any 580.x (a whole branch)."""
    have, need = Version.parse(version), Version.parse(floor)
    return have.parts[: len(need.parts)] >= need.parts


_CUDA_VARIANT = re.compile(r"cu([0-9][0-9])([0-9])")
_LOCAL_TAG = re.compile(r"\+(cu[0-9]{3})\Z")


@dataclass(frozen=True)
class CudaVariant:
    """A PyTorch CUDA build ("cu130") and the CUDA release it was built with (13.0).

    The one place a build's name is read: what needs its CUDA release asks this type.
    """

    name: str
    cuda: Version

    @classmethod
    def parse(cls, name: str) -> CudaVariant:
        """ "cu126" -> CUDA 12.6, "cu130" -> 13.0; ValueError for anything else ("cpu", "rocm6.2")."""
        found = _CUDA_VARIANT.fullmatch(name)
        if found is None:
            raise ValueError(f"not a CUDA build name like cu126: {name!r}")
        major, minor = found.groups()
        return cls(name, Version.parse(f"{int(major)}.{minor}"))

    @classmethod
    def of_wheel(cls, version: str) -> CudaVariant | None:
        """The build named in a wheel's local tag: "2.14.1+cu130" -> cu130; None without one."""
        found = _LOCAL_TAG.search(version)
        return cls.parse(found.group(1)) if found else None


def is_cuda_variant(name: str) -> bool:
    return _CUDA_VARIANT.fullmatch(name) is not None


@functools.lru_cache(maxsize=64)
def variant_cuda(variant: str) -> str:
    """ "cu126" -> "12.6", "cu130" -> "13.0", "cu118" -> "11.8"."""
    return CudaVariant.parse(variant).cuda.text


def kernel_sort_key(release: str) -> tuple[tuple[int, str], ...]:
    """Order kernel releases numerically: 5.15.0-101-generic after 5.15.0-91-generic."""
    parts = re.split(r"[.\-+_~]", release)
    return tuple((int(p), "") if _NUMBER.fullmatch(p) else (-1, p) for p in parts)


_NUMBER = re.compile(r"[0-9]{1,18}")


_FLAVOURED_KERNEL = re.compile(
    r"[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9]+|\+deb[0-9]+(?:u[0-9]+)?)-([a-z][a-z0-9-]*)"
)


def kernel_flavour(release: str) -> str | None:
    """The flavour of a Debian or Ubuntu kernel release, which names its metapackages.

    "6.1.0-57-cloud-amd64" and "6.12.118+deb13-cloud-amd64" -> "cloud-amd64" (Debian's
    ``linux-headers-cloud-amd64``); "5.15.0-126-generic" -> "generic"; RHEL and WSL kernels -> None.
    """
    match = _FLAVOURED_KERNEL.fullmatch(release)
    return match.group(1) if match else None
