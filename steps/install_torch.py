"""install-torch: the pinned torch / torchvision (/ torchaudio) set from PyTorch's own index.

``--index-url https://download.pytorch.org/whl/<variant>`` selects the CUDA build explicitly
(no ``--extra-index-url`` mixing with PyPI, no ``+cu116`` local pins as in the guide), and the
three versions are pinned together, because a torchvision built for another torch fails at
import (light-the-torch#157). pip itself is brought up to date first, with ``--force-reinstall``
so that it must reach the index: a plain ``--upgrade`` of an installed pip exits 0 when the index
cannot be reached, and a broken index would only show later, in the long PyTorch download.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.facts import HostFacts
from gpuwizard.plan import Action, Run, Target
from gpuwizard.selection import EnvChoice, TorchChoice
from gpuwizard.steps.base import Check
from gpuwizard.steps.create_env import find_env


def installed_matches(installed: str | None, version: str, variant: str) -> bool:
    """ "2.14.1+cu130" matches (2.14.1, cu130); a wheel without a local tag matches the version."""
    if installed is None:
        return False
    base, _, local = installed.partition("+")
    return base == version and local in ("", variant)


@dataclass(frozen=True)
class InstallTorch:
    env: EnvChoice
    torch: TorchChoice
    id: str = "install-torch"
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST, Target.IMAGE)

    @property
    def title(self) -> str:
        return f"Install PyTorch {self.torch.version} ({self.torch.variant})"

    @property
    def why(self) -> str:
        return (
            f"torch {self.torch.version} with torchvision {self.torch.torchvision or '(latest, UNCONFIRMED pair)'} "
            f"from {self.torch.index_url}: the build with kernels for these GPUs that the driver runs."
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
        pip = (f"{self.env.path}/bin/python", "-m", "pip")
        return (
            Run(
                (*pip, "install", "--quiet", "--upgrade", "--force-reinstall", "pip"), timeout_s=900
            ),
            Run(
                (*pip, "install", "--index-url", self.torch.index_url, *self.torch.requirements()),
                timeout_s=3600,
                silence_timeout_s=900,
            ),
        )

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
