"""install-python: a Python the chosen PyTorch supports, beside the system's, never replacing it.

Where the distribution has one (Rocky 9's python3.12, Ubuntu 22.04's python3.11) it comes as a
package. Elsewhere (Ubuntu 20.04 has nothing newer than 3.9) uv installs a standalone CPython
under /opt/gpuwizard/python; uv itself comes from PyPI as a pinned wheel whose SHA-256 (in
gpuwizard's download_pins.yaml) is checked before use, and uv verifies the interpreter it downloads.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.download_pins import Unpinned, pin_for
from gpuwizard.core.facts import HostFacts
from gpuwizard.core.ops import Download, UvPythonInstall
from gpuwizard.core.paths import TOOLS_DIR
from gpuwizard.core.plan import Action, Target
from gpuwizard.core.selection import EnvChoice
from gpuwizard.steps.base import Check, fetch, install_packages

UV_VERSION = "0.13.9"
"""Its wheels' SHA-256 per architecture are pinned in gpuwizard's download_pins.yaml."""
UV_SPEC = f"pypi:uv=={UV_VERSION}"
UV = f"{TOOLS_DIR}/uv"


def uv_runs(arch: str) -> bool:
    """gpuwizard pins a uv wheel for this CPU (x86_64, aarch64): elsewhere pip stays."""
    try:
        pin_for(UV_SPEC, arch)
    except Unpinned:
        return False
    return True


def fetch_uv(arch: str) -> Download:
    """The pinned uv, its wheel checked against download_pins.yaml's SHA-256 before the binary is used.

    Each step that runs uv fetches it (20 MB): the one that made it may have been done in an
    earlier run, by another gpuwizard, or not at all (an environment already there).
    """
    return fetch(UV_SPEC, UV, arch=arch, member=f"uv-{UV_VERSION}.data/scripts/uv")


def interpreter_for(facts: HostFacts, version: str) -> str | None:
    return next((i.path for i in facts.python.interpreters if i.version == version), None)


def os_packages(family: str, version: str) -> tuple[str, ...]:
    if family == "debian":
        return (f"python{version}", f"python{version}-venv")
    return (f"python{version}",)


@dataclass(frozen=True)
class InstallPython:
    family: str
    env: EnvChoice
    arch: str
    id: str = "install-python"
    title: str = "Install a newer Python"
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    @property
    def why(self) -> str:
        where = (
            "a distribution package"
            if self.env.python_source == "os-package"
            else "a standalone CPython installed by uv under /opt/gpuwizard/python"
        )
        return (
            f"The chosen PyTorch needs Python {self.env.python}; the system's python3 is older. "
            f"It is added beside it as {where}; the system's own Python and its packages stay as they are."
        )

    def check(self, facts: HostFacts) -> Check:
        path = interpreter_for(facts, self.env.python)
        return Check(
            path is not None,
            f"Python {self.env.python} at {path}" if path else f"no Python {self.env.python}",
        )

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        if self.env.python_source == "os-package":
            return install_packages(self.family, os_packages(self.family, self.env.python))
        return (fetch_uv(self.arch), UvPythonInstall(UV, self.env.python))

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
