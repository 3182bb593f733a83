"""Python interpreters and the environments gpuwizard manages, with their PyTorch packages, and
(``torch_envs``) the PyTorch installs a person already has.

Versions come from files (pyvenv.cfg, conda-meta, *.dist-info folder names), never by running
the environment's Python: detection runs before every step and must stay cheap.
"""

from __future__ import annotations

import re

from gpuwizard.core.facts import Environment, Interpreter, PythonEnv
from gpuwizard.core.paths import ENVS_DIR, MINIFORGE_DIR, PYTHONS_DIR
from gpuwizard.machine.detect import torch_envs
from gpuwizard.machine.host import Host

_PYTHON = re.compile(r"python(3\.[0-9]+)")
_DIST_INFO = re.compile(r"(torch|torchvision|torchaudio)-([^-\s]+)\.dist-info")
_PYVENV_VERSION = re.compile(r"^version(?:_info)?\s*=\s*([0-9]{1,3}\.[0-9]{1,3})", re.MULTILINE)
_CONDA_PYTHON = re.compile(r"python-([0-9]+\.[0-9]+)\.[0-9]+-[A-Za-z0-9_.+-]*\.json")


def parse_dist_infos(names: tuple[str, ...]) -> dict[str, str]:
    return {m.group(1): m.group(2) for name in names if (m := _DIST_INFO.fullmatch(name))}


def env_problem(host: Host, path: str, python: str | None, site: tuple[str, ...]) -> str | None:
    """Why a venv cannot be used, from its files alone (detection never runs its Python).

    A ``python3 -m venv`` that fails half-way (Debian without python3.X-venv: no ensurepip)
    leaves pyvenv.cfg and bin/python behind but no pip; a system Python that was removed or
    upgraded leaves bin/python a broken link.
    """
    if host.read_bytes(f"{path}/bin/python", limit=1) is None:
        return "its interpreter bin/python is missing or a broken link"
    if python is None:
        return "its pyvenv.cfg names no Python version"
    if not any(n == "pip" or (n.startswith("pip-") and n.endswith(".dist-info")) for n in site):
        return "it has no pip: it was left half made"
    return None


def read_env(host: Host, path: str, kind: str) -> Environment | None:
    python: str | None = None
    if kind == "venv":
        cfg = host.read_text(f"{path}/pyvenv.cfg", torch_envs.FILE_LIMIT)
        if cfg is None:
            return None
        match = _PYVENV_VERSION.search(cfg)
        python = match.group(1) if match else None
    else:
        if not host.is_dir(f"{path}/conda-meta"):
            return None
        python = next(
            (
                m.group(1)
                for n in host.listdir(f"{path}/conda-meta")
                if (m := _CONDA_PYTHON.fullmatch(n))
            ),
            None,
        )
    site = host.listdir(f"{path}/lib/python{python}/site-packages") if python else ()
    return Environment(
        path=path,
        kind="venv" if kind == "venv" else "conda",
        python=python,
        packages=parse_dist_infos(site),
        problem=env_problem(host, path, python, site) if kind == "venv" else None,
    )


def read_environments(host: Host) -> tuple[Environment, ...]:
    limit = torch_envs.LIST_LIMIT
    places = [(f"{ENVS_DIR}/{name}", "venv") for name in host.listdir(ENVS_DIR, limit)]
    places += [
        (f"{MINIFORGE_DIR}/envs/{name}", "conda")
        for name in host.listdir(f"{MINIFORGE_DIR}/envs", limit)
    ]
    return tuple(env for path, kind in places if (env := read_env(host, path, kind)))


def read_interpreters(host: Host) -> list[Interpreter]:
    found = [
        Interpreter(path=f"{folder}/{name}", version=match.group(1))
        for folder in ("/usr/bin", "/usr/local/bin")
        for name in host.listdir(folder)
        if (match := _PYTHON.fullmatch(name))
    ]
    for install in host.listdir(PYTHONS_DIR):  # uv's layout: cpython-3.12.8-linux-x86_64-gnu/bin
        if match := re.fullmatch(r"cpython-(3\.[0-9]+)\.[0-9]+-[A-Za-z0-9_.-]+", install):
            version = match.group(1)
            path = f"{PYTHONS_DIR}/{install}/bin/python{version}"
            if host.exists(path):
                found.append(Interpreter(path=path, version=version))
    return found


def read_python(host: Host, conda: str | None) -> PythonEnv:
    target = host.readlink("/usr/bin/python3") or ""
    system = _PYTHON.fullmatch(target.rsplit("/", 1)[-1])
    interpreters = tuple(read_interpreters(host))
    return PythonEnv(
        environments=read_environments(host),
        interpreters=interpreters,
        system_python=system.group(1) if system else None,
        conda=conda,
        torch_envs=torch_envs.read_torch_envs(host, interpreters),
    )
