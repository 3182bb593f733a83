"""What is already installed: GPU-stack packages, CUDA toolkits, runfile traces, conda, Python.

A server that "has nothing installed" often has something: a runfile driver from the image, a
/usr/local/cuda-11.6 from an old guide, a conda ``cudatoolkit``. Each of these conflicts with a
packaged install in its own way, so each is a fact.
"""

from __future__ import annotations

import re

from gpuwizard.detect import config, python_envs
from gpuwizard.facts import Installs, Package, PythonEnv
from gpuwizard.host import Host
from gpuwizard.paths import MINIFORGE_DIR

# Shell-style patterns for dpkg-query and rpm; both print nothing for a pattern with no match.
PACKAGE_PATTERNS = (
    "nvidia-*",
    "libnvidia-*",
    "linux-modules-nvidia-*",
    "cuda-*",
    "libcudnn*",
    "cudnn*",
    "datacenter-gpu-manager*",
    "dkms",
    "linux-headers-*",
    "kernel-devel*",
    "kernel-headers*",
    "docker-ce",
    "docker.io",
    "python3.1?",
    "python3.1?-venv",
)
DPKG_QUERY = ("dpkg-query", "-W", "-f=${binary:Package}\\t${Version}\\t${db:Status-Abbrev}\\n")
RPM_QUERY = ("rpm", "-qa", "--qf", "%{NAME}\\t%{VERSION}-%{RELEASE}\\tii \\n")
CONDA_DIRS = (
    "/opt/conda",
    "/opt/miniconda3",
    "/opt/miniforge3",
    "/root/miniconda3",
    "/root/miniforge3",
    "/root/anaconda3",
    MINIFORGE_DIR,
)


def _listed(text: str) -> list[tuple[str, str, str]]:
    """(name, version, status) of each well-formed line; dpkg's ":amd64" suffix dropped."""
    rows = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) >= 3:
            rows.append((fields[0].split(":", 1)[0], fields[1], fields[2].strip()))
    return rows


def parse_package_list(text: str) -> tuple[Package, ...]:
    """Lines of name<TAB>version<TAB>status; installed packages count, held ones too ("hi")."""
    packages = {
        Package(name, version) for name, version, status in _listed(text) if status[1:2] == "i"
    }
    return tuple(sorted(packages, key=lambda p: p.name))


def parse_held(text: str) -> tuple[str, ...]:
    """Packages whose dpkg selection is "hold" (status "h…"): what ``apt-mark showhold`` lists,
    without its second of apt cache loading."""
    return tuple(sorted({name for name, _, status in _listed(text) if status.startswith("h")}))


def read_packages(host: Host, family: str) -> tuple[tuple[Package, ...], tuple[str, ...]]:
    """The GPU stack's packages, and which of them are held (Debian family only)."""
    if family not in ("debian", "rhel"):
        return (), ()
    query = DPKG_QUERY if family == "debian" else RPM_QUERY
    out = host.run([*query, *PACKAGE_PATTERNS], timeout_s=30)
    held = parse_held(out.stdout) if family == "debian" else ()
    return parse_package_list(out.stdout), held


def read_cuda_toolkits(host: Host) -> tuple[str, ...]:
    versions = (
        name.removeprefix("cuda-")
        for name in host.listdir("/usr/local")
        if re.fullmatch(r"cuda-\d+\.\d+", name)
    )
    return tuple(sorted(versions, key=lambda v: tuple(int(p) for p in v.split("."))))


def read_runfile_driver(host: Host) -> bool:
    return host.exists("/usr/bin/nvidia-uninstall") or host.exists("/var/log/nvidia-installer.log")


def conda_dirs(host: Host) -> list[str]:
    homes = [f"/home/{user}" for user in host.listdir("/home")]
    candidates = list(CONDA_DIRS) + [
        f"{home}/{name}" for home in homes for name in ("miniconda3", "miniforge3", "anaconda3")
    ]
    return [path for path in candidates if host.exists(f"{path}/bin/conda")]


def read_conda_cudatoolkit(host: Host, roots: list[str]) -> tuple[str, ...]:
    found = set()
    for root in roots:
        for name in host.listdir(f"{root}/conda-meta"):
            if match := re.match(r"^cudatoolkit-(\d+\.\d+[\d.]*)-.*\.json$", name):
                found.add(match.group(1))
    return tuple(sorted(found))


def read_installs(host: Host, family: str) -> tuple[Installs, PythonEnv]:
    conda = conda_dirs(host)
    packages, held = read_packages(host, family)
    installs = Installs(
        packages=packages,
        cuda_toolkits=read_cuda_toolkits(host),
        runfile_driver=read_runfile_driver(host),
        conda_cudatoolkit=read_conda_cudatoolkit(host, conda),
        nvidia_smi=host.exists("/usr/bin/nvidia-smi"),
        nouveau_blacklisted=config.read_nouveau_blacklisted(host),
        nvidia_module_kernels=config.read_nvidia_module_kernels(host),
        repositories=config.read_repositories(host),
        held_packages=held,
        services_enabled=config.read_services_enabled(host),
        managed_files=config.read_managed_files(host),
        mok=config.read_mok(host),
        verification=config.read_verification(host),
    )
    return installs, python_envs.read_python(host, conda[0] if conda else None)
