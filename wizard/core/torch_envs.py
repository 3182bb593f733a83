"""PyTorch installs a person already has, as detection found them: pure values, part of HostFacts.

A ``TorchEnv`` says where a torch lives (a venv, a conda environment, a system Python's
dist-packages, a user's ~/.local), which interpreter runs it, and what was read from its files:
torch's version and the CUDA it was built for (torch/version.py), torchvision's and
torchaudio's. Nothing here reads the machine or judges whether a torch fits it (that is
``wizard/recommend/existing.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from gpuwizard.core.version import CudaVariant

_VERSION = re.compile(r"^__version__\s*=\s*['\"]([^'\"\n]{1,64})['\"]", re.MULTILINE)
_CUDA = re.compile(
    r"^cuda(?:\s*:\s*[^=\n]+)?\s*=\s*(?:['\"]([^'\"\n]{1,16})['\"]|None)", re.MULTILINE
)

TorchEnvKind = Literal["venv", "conda", "system", "user"]
"""venv: a virtual environment (pyvenv.cfg); conda: a conda environment (conda-meta); system: a
system interpreter's dist-packages or site-packages (Lambda Stack's debs, pip as root); user: a
user's ~/.local site-packages."""


@dataclass(frozen=True)
class TorchEnv:
    """One PyTorch found on the machine, from its files only (its Python is never run here)."""

    path: str
    """The environment's prefix: /opt/torch/.venv, /opt/conda/envs/pytorch; for a system or user
    install the prefix of its interpreter (/usr, /usr/local) or the home (/home/alice/.local)."""
    kind: TorchEnvKind
    python: str
    """The interpreter that imports this torch: /opt/torch/.venv/bin/python, /usr/bin/python3.12."""
    python_version: str | None
    """major.minor ("3.12"), from pyvenv.cfg, conda-meta or the site folder's name."""
    site: str
    """The folder torch/ is in (site-packages or dist-packages)."""
    torch: str
    """As installed, with any local tag: "2.11.0+cu130"."""
    torch_cuda: str | None
    """The CUDA torch was built for ("13.0", torch.version.cuda); None for a CPU build, or when
    ``build_known`` is False."""
    build_known: bool = True
    """False when neither torch/version.py nor a +cuXYZ / +cpu tag said which build this is."""
    torchvision: str | None = None
    torchaudio: str | None = None
    found_by: tuple[str, ...] = ()
    """How detection came to it, first way first: "first python3 on PATH", "VIRTUAL_ENV",
    "CONDA_PREFIX", "conda install /opt/conda", "venv in /opt", "home of alice",
    "system dist-packages"."""
    on_path: bool = False
    """Its interpreter is the ``python3`` first on the session's PATH."""

    @property
    def release(self) -> str:
        """ "2.11.0+cu130" -> "2.11.0"."""
        return self.torch.split("+", 1)[0]

    @property
    def variant(self) -> str | None:
        """The CUDA wheel variant of its build ("cu130"); None for a CPU or unknown build."""
        return f"cu{self.torch_cuda.replace('.', '')}" if self.torch_cuda else None

    @property
    def build(self) -> str:
        """ "CUDA 13.0", "CPU only" or "build unknown", for a person."""
        if self.torch_cuda:
            return f"CUDA {self.torch_cuda}"
        return "CPU only" if self.build_known else "build unknown"

    def words(self) -> str:
        """ "torch 2.11.0+cu130 (CUDA 13.0) in /opt/torch/.venv, Python 3.12"."""
        python = f", Python {self.python_version}" if self.python_version else ""
        return f"torch {self.torch} ({self.build}) in {self.path}{python}"


def parse_version_py(text: str) -> tuple[str, str | None] | None:
    """(version, cuda) from a package's version.py (torch, torchvision, torchaudio write one at
    build time: ``__version__ = '2.11.0+cu130'``, torch also ``cuda = '13.0'``); None when the
    text is not one. ``cuda`` is None for a CPU build and for packages that do not say."""
    version = _VERSION.search(text)
    if version is None:
        return None
    cuda = _CUDA.search(text)
    return version.group(1), cuda.group(1) if cuda else None


def cuda_of_local_tag(version: str) -> str | None:
    """ "2.11.0+cu130" -> "13.0"; None without a CUDA tag (PyPI's default wheels have none)."""
    build = CudaVariant.of_wheel(version)
    return build.cuda.text if build else None
