"""install-torch: the pinned torch / torchvision (/ torchaudio) set, by hash where gpuwizard can.

``--index-url https://download.pytorch.org/whl/<variant>`` selects the CUDA build explicitly
(no ``--extra-index-url`` mixing with PyPI, no ``+cu116`` local pins as in the guide), and the
three versions are pinned together, because a torchvision built for another torch fails at
import (light-the-torch#157).

uv installs them (the pinned uv, its wheel checked against download_pins.yaml's SHA-256): about 3x faster
than pip on the same wheels (docs/decisions.md), the same versions from the same index.

PyPI's default CUDA build of a release is PyPI's own torch wheel; for the sets gpuwizard has a
hashes file of (``wizard/core/torch-hashes/``, from PyPI's metadata) uv installs from that file
with ``--verify-hashes``: torch's and torchvision's wheels are checked against those hashes (a
mismatch, or a wheel the file does not list, fails the step), the dependencies resolved from PyPI
by version as before. uv's ``--require-hashes`` would demand hashes for those dependencies too,
which gpuwizard does not pin. The other builds live on PyTorch's own index, whose hashes could
not be read from where gpuwizard's data is made: they are installed by version, and the step
says so.

pip remains where gpuwizard pins no uv for the CPU (uv's wheels are pinned for x86_64 and
aarch64): there the wheels are downloaded with ``pip download --require-hashes --no-deps`` and
installed from the download folder, and pip is first brought to its pinned version with
``--force-reinstall``, so that it must reach the index (a plain upgrade of an installed pip exits
0 when the index cannot be reached, and a broken index would only show later, in the long
PyTorch download).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.download_pins import PYPI_INDEX, TorchWheels, pip_for, torch_wheels
from gpuwizard.core.facts import HostFacts
from gpuwizard.core.ops import PipDownload, PipInstall, UvPipInstall
from gpuwizard.core.paths import DOWNLOADS_DIR
from gpuwizard.core.plan import Action, Target, WriteFile
from gpuwizard.core.selection import EnvChoice, TorchChoice
from gpuwizard.steps.base import Check
from gpuwizard.steps.create_env import find_env
from gpuwizard.steps.install_python import UV, fetch_uv, uv_runs


def installed_matches(installed: str | None, version: str, variant: str) -> bool:
    """ "2.14.1+cu130" matches (2.14.1, cu130); a wheel without a local tag matches the version."""
    if installed is None:
        return False
    base, _, local = installed.partition("+")
    return base == version and local in ("", variant)


def packages(torch: TorchChoice) -> tuple[str, ...]:
    return ("torch", "torchvision", *(("torchaudio",) if torch.torchaudio else ()))


def hashed_wheels(torch: TorchChoice, python: str, arch: str) -> tuple[str, ...] | None:
    """The wheel files of this set for this Python and CPU, when all are pinned by hash."""
    wheels: TorchWheels | None = torch_wheels(torch.version, torch.variant)
    if wheels is None or not torch.torchvision:
        return None
    names = tuple(wheels.wheel(p, python, arch) for p in packages(torch))
    return None if None in names else tuple(n for n in names if n is not None)


@dataclass(frozen=True)
class InstallTorch:
    env: EnvChoice
    torch: TorchChoice
    arch: str = "x86_64"
    id: str = "install-torch"
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST, Target.IMAGE)

    @property
    def title(self) -> str:
        return f"Install PyTorch {self.torch.version} ({self.torch.variant})"

    @property
    def why(self) -> str:
        hashed = hashed_wheels(self.torch, self.env.python, self.arch) is not None
        where = (
            "PyPI (its default build, the wheels checked against the SHA-256 gpuwizard pins)"
            if hashed
            else f"{self.torch.index_url} (pinned by version; its hashes are not in gpuwizard's data)"
        )
        tool = (
            "uv installs it (pinned, its SHA-256 checked), about 3x faster than pip."
            if uv_runs(self.arch)
            else f"pip installs it: gpuwizard pins no uv for {self.arch}."
        )
        return (
            f"torch {self.torch.version} with torchvision {self.torch.torchvision or '(latest, UNCONFIRMED pair)'} "
            f"from {where}: the build with kernels for these GPUs that the driver runs. {tool}"
        )

    def wrong(self, facts: HostFacts) -> list[str]:
        env = find_env(facts, self.env.path)
        packages = env.packages if env else {}
        wanted = {
            "torch": self.torch.version,
            "torchvision": self.torch.torchvision,
            "torchaudio": self.torch.torchaudio,
        }
        out = []
        for name, version in wanted.items():
            if version and not installed_matches(packages.get(name), version, self.torch.variant):
                out.append(f"{name} {packages.get(name, 'missing')} (want {version})")
        if not self.torch.torchvision and "torchvision" not in packages:
            out.append("torchvision missing")
        return out

    def check(self, facts: HostFacts) -> Check:
        problems = self.wrong(facts)
        return Check(
            not problems,
            "; ".join(problems)
            if problems
            else f"torch {self.torch.version} ({self.torch.variant}) installed",
        )

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        env = self.env.path
        if uv_runs(self.arch):
            return (fetch_uv(self.arch), *self.uv_install(env))
        pinned = f"pip=={pip_for(self.env.python).version}"
        upgrade = PipInstall(
            env, (pinned,), quiet=True, force_reinstall=True, timeout_s=900, silence_timeout_s=600
        )
        wheels = hashed_wheels(self.torch, self.env.python, self.arch)
        if wheels is None:
            install = PipInstall(env, self.torch.requirements(), self.torch.index_url)
            return (upgrade, install)
        return (upgrade, *self.hashed_install(env, wheels))

    def uv_install(self, env: str) -> tuple[Action, ...]:
        """One uv install: the hashed set from its hashes file (exactly torch and torchvision,
        the set hashed_wheels found every wheel of), or the set by version from its index."""
        # The set is always installed again: a torch of the same version but another CUDA build
        # satisfies "==" and uv would keep it (the step runs only when the set is not right).
        again = packages(self.torch)
        if hashed_wheels(self.torch, self.env.python, self.arch) is None:
            requirements, index = self.torch.requirements(), self.torch.index_url
            return (UvPipInstall(UV, env, requirements, index, reinstall=again),)
        text = self.hashes_text()
        hashes = f"{DOWNLOADS_DIR}/torch-{self.torch.version}-{self.torch.variant}.hashes.txt"
        return (
            WriteFile(hashes, text, 0o644),
            UvPipInstall(UV, env, index_url=PYPI_INDEX, hashes_file=hashes, reinstall=again),
        )

    def hashed_install(self, env: str, wheels: tuple[str, ...]) -> tuple[Action, ...]:
        """pip checks each wheel against the pinned hashes as it downloads it, then installs the
        checked files; their dependencies come from PyPI as pip resolves them."""
        name = f"torch-{self.torch.version}-{self.torch.variant}"
        hashes, folder = f"{DOWNLOADS_DIR}/{name}.hashes.txt", f"{DOWNLOADS_DIR}/{name}"
        return (
            WriteFile(hashes, self.hashes_text(), 0o644),
            PipDownload(env, PYPI_INDEX, folder, hashes),
            PipInstall(env, tuple(f"{folder}/{w}" for w in wheels), PYPI_INDEX),
        )

    def hashes_text(self) -> str:
        """This environment's hashes file: its Python's and CPU's wheels only (hashed_wheels
        found every one before this is asked)."""
        wheels = torch_wheels(self.torch.version, self.torch.variant)
        text = wheels and wheels.requirements_for(packages(self.torch), self.env.python, self.arch)
        assert text, "hashed_wheels found every wheel"
        return text

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
