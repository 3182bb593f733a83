"""What the user chose to install, resolved: the input of the install steps.

The recommender proposes, the person's request (``core.request``) says the rest (environment,
optional parts), and the planner turns both into a ``Selection``, which keeps the request it was
made from. Steps read nothing else, so a recorded answers file that reproduces the Selection
reproduces the plan. Pure data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpuwizard.core.request import EnvKind, Flavor, SetupRequest
from gpuwizard.core.version import variant_cuda

DriverAction = Literal["install", "keep", "upgrade"]
PythonSource = Literal["system", "os-package", "standalone"]
"""Where the environment's interpreter comes from: the system python3, an extra distribution
package (python3.12 on Rocky 9), or a standalone CPython installed by uv."""


@dataclass(frozen=True)
class DriverChoice:
    action: DriverAction
    branch: str
    version: str
    flavor: Flavor | None
    packages: tuple[str, ...] = ()
    source: str = "ubuntu-archive"
    """ubuntu-archive | cuda-repo-apt | cuda-repo-dnf | host | installed."""
    module_stream: str | None = None
    signed_modules: bool = False
    """Ubuntu's Canonical-signed prebuilt modules (Secure Boot without MOK enrollment)."""
    version_lock: str | None = None
    """RHEL 10 family: the dnf versionlock pattern that holds the branch (no module streams)."""

    @property
    def installs(self) -> bool:
        return self.action != "keep"


@dataclass(frozen=True)
class TorchChoice:
    version: str
    variant: str
    index_url: str
    torchvision: str | None
    torchaudio: str | None = None

    def requirements(self) -> tuple[str, ...]:
        pins = [f"torch=={self.version}"]
        pins += [f"torchvision=={self.torchvision}"] if self.torchvision else ["torchvision"]
        pins += [f"torchaudio=={self.torchaudio}"] if self.torchaudio else []
        return tuple(pins)


@dataclass(frozen=True)
class EnvChoice:
    kind: EnvKind
    path: str
    """Absolute; a venv under /opt/gpuwizard/envs or a conda env under Miniforge's envs."""
    python: str
    """major.minor."""
    python_source: PythonSource = "system"
    existing: str | None = None
    """The interpreter of an environment that was here already (``--use-env``), used as it is:
    nothing is created or installed in it. None: gpuwizard makes the environment."""

    @property
    def interpreter(self) -> str:
        """The Python that imports this environment's torch."""
        return self.existing or f"{self.path}/bin/python"


@dataclass(frozen=True)
class Selection:
    family: Literal["debian", "rhel"]
    cuda_repo: str
    """NVIDIA's repository folder for this OS: ubuntu2204, debian12, rhel9, ..."""
    arch: str
    driver: DriverChoice
    torch: TorchChoice
    env: EnvChoice
    request: SetupRequest = field(default_factory=SetupRequest)
    """What the person asked for: the optional parts the steps install come from here."""
    wsl: bool = False
    """Under WSL the driver is Windows'; only the Python side is set up."""

    @property
    def cuda_toolkit(self) -> str | None:
        """The CUDA toolkit (nvcc) to install, matching the torch build ("13.0"); None: none."""
        return variant_cuda(self.torch.variant) if self.request.needs_nvcc else None

    @property
    def repo_arch(self) -> str:
        """NVIDIA's name for the CPU architecture in repository URLs."""
        return "sbsa" if self.arch == "aarch64" else "x86_64"
