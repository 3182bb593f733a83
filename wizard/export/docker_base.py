"""The Dockerfile's base image: which ``nvidia/cuda`` tag, and why.

Base image rule: ``nvidia/cuda:<X.Y.Z>-base-<os>``, pinned to an exact tag (never ``latest``),
whose CUDA is the lower of two versions: the newest CUDA the host's driver supports (what NVML
reports for a kept driver, else the compat table's ``max_cuda`` for the branch the plan installs)
and the CUDA of the chosen torch build (cu126 -> 12.6). Why not plain ``ubuntu``/``python``: the
``nvidia/cuda`` images declare ``NVIDIA_REQUIRE_CUDA``, so the NVIDIA Container Toolkit refuses to
start the image on a driver too old for it, with a clear message, instead of torch failing later;
they also ship NVIDIA's CUDA repository with its signed-by keyring, which the toolkit, cuDNN and
DCGM packages come from. Why only "base": PyTorch's wheels bring their own CUDA runtime, cuDNN and
NCCL, so the large runtime/devel flavours would only duplicate them. The image OS follows the
plan's family (apt or dnf, so the plan's package commands run unchanged): the host's own Ubuntu
release when NVIDIA publishes it, Rocky Linux 9 for the RHEL family, and for Debian the Ubuntu
LTS that packages the environment's Python. The environment's Python comes from the image OS's
packages when it has that version, else as a standalone CPython installed by uv, as on the host.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.facts import NvmlOk
from gpuwizard.core.version import Version, is_version, variant_cuda
from gpuwizard.export.source import ExportError, ExportSource
from gpuwizard.recommend.table import CompatTable

CUDA_IMAGE = "nvidia/cuda"


@dataclass(frozen=True)
class ImageOs:
    name: str
    """As in the nvidia/cuda tag: "ubuntu22.04", "rockylinux9"."""
    family: str
    table_id: str
    table_version: str


IMAGE_OSES = (
    ImageOs("ubuntu20.04", "debian", "ubuntu", "20.04"),
    ImageOs("ubuntu22.04", "debian", "ubuntu", "22.04"),
    ImageOs("ubuntu24.04", "debian", "ubuntu", "24.04"),
    ImageOs("rockylinux9", "rhel", "rocky", "9"),
)
"""Oldest first, per family."""

_ALL = ("ubuntu20.04", "ubuntu22.04", "ubuntu24.04", "rockylinux9")
_NO_FOCAL = ("ubuntu22.04", "ubuntu24.04", "rockylinux9")
CUDA_TAGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("11.0.3", ("ubuntu20.04",)),
    ("11.4.3", ("ubuntu20.04",)),
    ("11.8.0", ("ubuntu20.04", "ubuntu22.04")),
    ("12.0.1", ("ubuntu20.04", "ubuntu22.04", "rockylinux9")),
    ("12.1.1", ("ubuntu20.04", "ubuntu22.04", "rockylinux9")),
    ("12.2.2", ("ubuntu20.04", "ubuntu22.04", "rockylinux9")),
    ("12.3.2", ("ubuntu20.04", "ubuntu22.04", "rockylinux9")),
    ("12.4.1", _ALL),
    ("12.5.1", _ALL),
    ("12.6.3", _ALL),
    ("12.8.1", _ALL),
    ("12.9.1", _ALL),
    ("13.0.2", _NO_FOCAL),  # CUDA 13 dropped Ubuntu 20.04
    ("13.1.1", _NO_FOCAL),
    ("13.2.1", _NO_FOCAL),
)
"""The newest patch release of each CUDA minor with a ``-base-<os>`` image on Docker Hub."""
SEEN_TAGS = frozenset(
    {
        "11.0.3-base-ubuntu20.04", "11.4.3-base-ubuntu20.04", "12.0.1-base-ubuntu22.04",
        "12.1.1-base-rockylinux9", "12.2.2-base-ubuntu22.04", "12.3.2-base-rockylinux9",
        "12.4.1-base-ubuntu20.04", "12.4.1-base-ubuntu24.04", "12.4.1-base-rockylinux9",
        "12.6.3-base-ubuntu20.04", "12.6.3-base-rockylinux9", "12.8.1-base-rockylinux9",
        "12.9.1-base-ubuntu20.04", "12.9.1-base-ubuntu24.04", "13.0.2-base-ubuntu22.04",
        "13.0.2-base-ubuntu24.04", "13.2.1-base-ubuntu24.04",
    }
)  # fmt: skip
"""Tags seen in use in public Dockerfiles (2026-12); the others are inferred and marked so."""


@dataclass(frozen=True)
class BaseImage:
    image: str
    os: ImageOs
    cuda_limit: str
    """The lower of the driver's and the torch build's CUDA: the image's CUDA may not exceed it."""
    why: str
    confirmed: bool


def driver_cuda(source: ExportSource, table: CompatTable) -> tuple[str | None, str]:
    """The newest CUDA the host driver supports, and where that comes from (None: unknown)."""
    driver = source.selection.driver
    nvml = source.facts.boot.nvml
    if (
        driver.action == "keep"
        and isinstance(nvml, NvmlOk)
        and nvml.driver_version.split(".")[0] == driver.branch
        and is_version(nvml.cuda_driver_version)
    ):
        return nvml.cuda_driver_version, f"the kept driver {nvml.driver_version} reports CUDA"
    branch = table.branch(driver.branch)
    if branch is not None:
        return branch.max_cuda, f"driver R{driver.branch} supports CUDA up to"
    return None, f"driver R{driver.branch} is not in the compat table; assumed to run CUDA"


def image_os(source: ExportSource, table: CompatTable) -> ImageOs:
    """The host's own release when there is an image for it, else the best of its family."""
    family = [o for o in IMAGE_OSES if o.family == source.selection.family] or list(IMAGE_OSES[:3])
    host = source.facts.os
    for candidate in family:
        if host and host.id == candidate.table_id:
            version = host.version_id
            if version == candidate.table_version or version.startswith(
                candidate.table_version + "."
            ):
                return candidate
    python = source.selection.env.python
    fitting = [o for o in family if python in packaged_pythons(table, o)]
    return (fitting or family)[-1]


def packaged_pythons(table: CompatTable, os: ImageOs) -> tuple[str, ...]:
    row = table.os_release(os.table_id, os.table_version)
    return (row.python3, *row.extra_pythons) if row else ()


def torch_cuda(variant: str) -> str:
    cuda = variant_cuda(variant)
    if not is_version(cuda):
        raise ExportError(f"torch build {variant!r} names no CUDA version (expected e.g. cu126)")
    return cuda


def base_image(source: ExportSource, table: CompatTable) -> BaseImage:
    variant = source.selection.torch.variant
    wheel = torch_cuda(variant)
    driver, said = driver_cuda(source, table)
    limit = min(Version.parse(wheel), Version.parse(driver or wheel))
    os = image_os(source, table)
    tags = [
        t for t, oses in CUDA_TAGS if os.name in oses and Version.parse(t).parts[:2] <= limit.parts
    ]
    if not tags:
        raise ExportError(
            f"no {CUDA_IMAGE} base image has CUDA {limit} or older for {os.name}: "
            "upgrade the driver or choose an older torch build"
        )
    tag = f"{tags[-1]}-base-{os.name}"
    why = (
        f"{said} {driver or wheel}, and the {variant} build of torch uses CUDA {wheel}: the image's "
        f"CUDA may not exceed the lower one, {limit}, or the NVIDIA Container Toolkit refuses to start "
        "it. torch brings its own CUDA runtime, cuDNN and NCCL, so the small 'base' flavour is enough."
    )
    return BaseImage(f"{CUDA_IMAGE}:{tag}", os, str(limit), why, tag in SEEN_TAGS)
