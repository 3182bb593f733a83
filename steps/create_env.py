"""create-env: the Python environment PyTorch goes into, a venv by default or a conda env.

A venv from a fitting interpreter is the default: small, fast, made by the pinned uv (its
wheel checked against download_pins.yaml's SHA-256, as install-python fetches it), which also installs
PyTorch into it (install-torch). uv needs no ensurepip; pip, for the person's own use, is the
pinned one, installed by uv against its SHA-256 (``uv venv --seed`` would take the newest pip,
setuptools and wheel from PyPI, unpinned). The guide's conda is offered through Miniforge
(conda-forge's installer, no Anaconda licence terms); only Python comes from conda, PyTorch still
from its pip index.

Where gpuwizard pins no uv for the CPU, ``python3 -m venv`` makes it. On Debian and Ubuntu that
needs the release's ``python3.X-venv`` package (ensurepip); a minimal image lacks it, and the venv
is then left half made. The package is installed first where it is missing, and an environment
that was left half made (no pip, or an interpreter link that points nowhere) is made again rather
than taken as done.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwizard.core.download_pins import PYPI_INDEX, pip_for
from gpuwizard.core.facts import Environment, HostFacts
from gpuwizard.core.ops import CondaCreate, MiniforgeInstall, UvPipInstall, UvVenv, Venv
from gpuwizard.core.paths import DOWNLOADS_DIR, MINIFORGE_DIR
from gpuwizard.core.plan import Action, Target, WriteFile
from gpuwizard.core.selection import EnvChoice
from gpuwizard.steps.base import Check, apt_install, fetch, missing, unconfirmed_note
from gpuwizard.steps.install_python import UV, fetch_uv, uv_runs

MINIFORGE_VERSION = "25.11.0-1"
MINIFORGE_URL = "https://github.com/conda-forge/miniforge/releases/download"


def miniforge_url(arch: str) -> str:
    return f"{MINIFORGE_URL}/{MINIFORGE_VERSION}/Miniforge3-{MINIFORGE_VERSION}-Linux-{arch}.sh"


def find_env(facts: HostFacts, path: str) -> Environment | None:
    return next((e for e in facts.python.environments if e.path == path), None)


@dataclass(frozen=True)
class CreateEnv:
    env: EnvChoice
    arch: str
    family: str = "debian"
    id: str = "create-env"
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST,)

    @property
    def title(self) -> str:
        return f"Create the {'conda' if self.env.kind == 'conda' else 'Python'} environment {self.env.path}"

    @property
    def why(self) -> str:
        if self.env.kind == "conda":
            return (
                "A conda environment (Miniforge, conda-forge) as the guide prefers; "
                "PyTorch itself still comes from its pip index, pinned."
                + unconfirmed_note(miniforge_url(self.arch))
            )
        venv = (
            f" python{self.env.python}-venv is installed first where it is missing: without it "
            "python3 -m venv fails half-way on a minimal Debian or Ubuntu."
            if self.needs_venv_package
            else ""
        )
        isolated = f"An isolated Python {self.env.python} environment: PyTorch never mixes with the system's packages."
        made = (
            " uv (pinned, its SHA-256 checked) makes it."
            if uv_runs(self.arch)
            else f" python -m venv makes it: gpuwizard pins no uv for {self.arch}."
        )
        return isolated + made + venv

    @property
    def needs_venv_package(self) -> bool:
        """Debian's and Ubuntu's system Python makes venvs only with its python3.X-venv package
        (install-python brings it along with a distribution-packaged newer Python)."""
        system = self.env.python_source == "system"
        debian = self.family == "debian" and self.env.kind == "venv"
        return debian and system and not uv_runs(self.arch)

    def venv_package(self) -> str:
        return f"python{self.env.python}-venv"

    def check(self, facts: HostFacts) -> Check:
        found = find_env(facts, self.env.path)
        if found is None:
            return Check(False, f"{self.env.path} does not exist")
        if found.python != self.env.python:
            return Check(False, f"{self.env.path} has Python {found.python}, not {self.env.python}")
        if found.problem:
            return Check(False, f"{self.env.path} is broken ({found.problem}); it is made again")
        return Check(True, f"{self.env.path} (Python {found.python})")

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        if self.check(facts).satisfied:
            return ()
        if self.env.kind == "conda":
            return self.conda_plan(facts)
        # A path fixed before the run, so the reviewed plan stays the plan after earlier steps.
        python = f"/usr/bin/python{self.env.python}"
        if self.env.python_source == "standalone":
            # uv finds the CPython it installed by version; its exact path is not known in advance.
            # uv is fetched again, as every step that runs it does: install-python may have been
            # done in an earlier run, or by another gpuwizard with another uv.
            venv = UvVenv(UV, self.env.python, self.env.path)
            return (fetch_uv(self.arch), venv, *self.pinned_pip())
        if uv_runs(self.arch):
            return (fetch_uv(self.arch), UvVenv(UV, python, self.env.path), *self.pinned_pip())
        create = Venv(python, self.env.path)
        if self.needs_venv_package and missing(facts, [self.venv_package()]):
            return (*apt_install([self.venv_package()]), create)
        return (create,)

    def pinned_pip(self) -> tuple[Action, ...]:
        """pip in the new venv: the pinned release for its Python, checked against its SHA-256."""
        pip = pip_for(self.env.python)
        hashes = f"{DOWNLOADS_DIR}/pip-{pip.version}.hashes.txt"
        text = f"pip=={pip.version} --hash=sha256:{pip.sha256}\n"
        install = UvPipInstall(UV, self.env.path, index_url=PYPI_INDEX, hashes_file=hashes)
        return (WriteFile(hashes, text, 0o644), install)

    def conda_plan(self, facts: HostFacts) -> tuple[Action, ...]:
        conda = f"{MINIFORGE_DIR}/bin/conda"
        actions: tuple[Action, ...] = ()
        if facts.python.conda != MINIFORGE_DIR:
            installer = f"Miniforge3-{MINIFORGE_VERSION}-Linux-{self.arch}.sh"
            local = f"{DOWNLOADS_DIR}/{installer}"
            actions += (
                # Checked against gpuwizard's pin, never a checksum from the same server; it runs
                # from the download folder, which only root can enter.
                fetch(miniforge_url(self.arch), local),
                MiniforgeInstall(local, MINIFORGE_DIR),
            )
        create = CondaCreate(conda, self.env.path, self.env.python)
        return (*actions, create)

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
