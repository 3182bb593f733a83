"""What is already installed: GPU-stack packages, CUDA toolkits, runfile traces, conda, Python.

A server that "has nothing installed" often has something: a runfile driver from the image, a
/usr/local/cuda-11.6 from an old guide, a conda ``cudatoolkit``. Each of these conflicts with a
packaged install in its own way, so each is a fact.
"""

from __future__ import annotations

import re

from gpuwizard.core.facts import Boot, Installs, Package, PythonEnv
from gpuwizard.core.paths import MINIFORGE_DIR
from gpuwizard.machine import dpkgdb
from gpuwizard.machine.detect import apt_sources, config, python_envs
from gpuwizard.machine.dpkgdb import DpkgDatabase
from gpuwizard.machine.host import Host

# Shell-style patterns over package names (dpkg's database, rpm's query).
PACKAGE_PATTERNS = (
    "nvidia-*",
    "libnvidia-*",
    "libcuda1",
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


def parse_package_list(text: str) -> tuple[Package, ...]:
    """``rpm -qa`` lines of name<TAB>version<TAB>ii (the query writes "ii" for installed)."""
    packages = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) >= 3 and fields[2].strip().startswith("ii"):
            name = fields[0].split(":", 1)[0]  # drop dpkg's ":amd64" multi-arch suffix
            packages.append(Package(name=name, version=fields[1]))
    return tuple(sorted(set(packages), key=lambda p: p.name))


def read_dpkg(host: Host) -> DpkgDatabase:
    """dpkg's database as this host's files hold it (empty when there is none)."""
    status = host.read_text(dpkgdb.STATUS, dpkgdb.STATUS_MAX_BYTES) or ""
    return dpkgdb.database(status, host.listdir(dpkgdb.UPDATES))


def read_packages(host: Host, family: str, dpkg: DpkgDatabase | None) -> tuple[Package, ...]:
    if dpkg is not None:
        return tuple(Package(name, version) for name, version in dpkg.installed(PACKAGE_PATTERNS))
    if family != "rhel":
        return ()
    out = host.run([*RPM_QUERY, *PACKAGE_PATTERNS], timeout_s=30)
    return parse_package_list(out.stdout)


def read_cuda_toolkits(host: Host) -> tuple[str, ...]:
    versions = (
        name.removeprefix("cuda-")
        for name in host.listdir("/usr/local")
        if re.fullmatch(r"cuda-[0-9]+\.[0-9]+", name)
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
            if match := re.fullmatch(
                r"cudatoolkit-([0-9]+\.[0-9]+[0-9.]*)-[A-Za-z0-9_.+-]*\.json", name
            ):
                found.add(match.group(1))
    return tuple(sorted(found))


def read_installs(
    host: Host, family: str, dpkg: DpkgDatabase | None, boot: Boot, headers_wanted: bool = True
) -> tuple[Installs, PythonEnv]:
    """What is installed; ``dpkg`` is the package database on Debian and Ubuntu, else None.
    ``headers_wanted``: ask apt which kernel headers it offers (a driver may be built here)."""
    conda = conda_dirs(host)
    apt = family == "debian"
    kernels = tuple(k for k in dict.fromkeys([*boot.installed_kernels, boot.kernel]) if k)
    installs = Installs(
        packages=read_packages(host, family, dpkg),
        cuda_toolkits=read_cuda_toolkits(host),
        runfile_driver=read_runfile_driver(host),
        conda_cudatoolkit=read_conda_cudatoolkit(host, conda),
        nvidia_smi=host.exists("/usr/bin/nvidia-smi"),
        nouveau_blacklisted=config.read_nouveau_blacklisted(host),
        nvidia_module_kernels=config.read_nvidia_module_kernels(host),
        repositories=config.read_repositories(host),
        held_packages=dpkg.held if dpkg is not None else (),
        services_enabled=config.read_services_enabled(host),
        managed_files=config.read_managed_files(host),
        mok=config.read_mok(host, boot.secure_boot),
        verification=config.read_verification(host),
        apt_sources=apt_sources.read_apt_sources(host) if apt else (),
        archive_headers=(
            apt_sources.read_archive_headers(host, kernels) if apt and headers_wanted else None
        ),
    )
    return installs, python_envs.read_python(host, conda[0] if conda else None)
