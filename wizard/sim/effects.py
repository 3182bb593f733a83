"""What installing a package does to the simulated machine, and which packages its archive has.

Enough of apt, dpkg and dnf's behaviour for the install steps to be exercised for real: a
driver package builds a module only for kernels that have headers (else DKMS fails and dpkg is
left unconfigured, as on a real machine), signed prebuilt modules land beside the kernel, and
packages that do not exist for this release are refused the way apt refuses them.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

from gpuwizard.core.version import is_cuda_variant, variant_cuda
from gpuwizard.sim.sandbox import Sandbox, SimState

DRIVER_VERSIONS = {
    "595": "595.99.02", "580": "580.178.04", "570": "570.211.01", "550": "550.163.01", "535": "535.309.01",
}  # fmt: skip
"""The release of each branch this simulated archive installs: the compatibility table's
``latest`` (the archive's newest on the date it was read), so what a simulated setup installs is
what the Choose view named (tests/sim/test_archive.py keeps them equal)."""
ARCHIVE_VERSIONS = {
    "focal": {"570": "570.133.20", "535": "535.247.01"},
    "jammy": {"595": "595.91.07"}, "noble": {"595": "595.91.07"}, "resolute": {"595": "595.91.07"},
}  # fmt: skip
"""Where a release's own archive has another newest release of a branch (the table's
``driver_versions``, by codename)."""
# Package names this simulated archive knows (shell-like patterns); anything else is "not found".
ARCHIVE = (
    r"nvidia-driver-\d+(-server)?(-open)?", r"nvidia-utils-\d+(-server)?", r"nvidia-open", r"cuda-drivers",
    r"nvidia-driver-pinning-\d+", r"nvidia-fabricmanager-\d+", r"nvidia-fabric-manager", r"nvidia-container-toolkit",
    r"linux-modules-nvidia-\d+-server(-open)?-.+", r"cuda-toolkit-\d+-\d+", r"cudnn9-cuda-\d+", r"cuda-keyring",
    r"datacenter-gpu-manager-4-.+", r"docker\.io", r"docker-ce(-cli)?", r"containerd\.io", r"python3\.1\d(-venv)?",
    r"dnf-plugins-core", r"linux-headers-.+", r"linux-image-.+", r"kernel-devel-.+", r"kernel-headers-.+", r"dkms",
    r"nvidia-kernel-dkms", r"nvidia-open-kernel-dkms", r"libcuda1", r"nvidia-smi", r"nvidia-persistenced", r"curl",
)  # fmt: skip
DEBIAN_DKMS = ("nvidia-kernel-dkms", "nvidia-open-kernel-dkms")
"""Debian's own driver packages (recommend.debian_native), built by DKMS like the others."""
DEBIAN_DRIVER_VERSIONS = {"bookworm": "535.309.01-0+deb12u1", "trixie": "550.163.01-2"}


def known(name: str) -> bool:
    return any(re.fullmatch(pattern, name) for pattern in ARCHIVE)


def version_for(name: str, codename: str = "") -> str:
    if name in DEBIAN_DKMS:
        return DEBIAN_DRIVER_VERSIONS.get(codename, "535.309.01-0+deb12u1")
    branch = re.search(r"-(\d{3})(-|$)", name)
    if name in ("nvidia-open", "cuda-drivers") or (
        branch and name.startswith(("nvidia-driver", "nvidia-utils", "nvidia-fabricmanager"))
    ):
        number = driver_release(branch.group(1) if branch else "580", codename)
        return f"{number}-0ubuntu1"
    return "1.0-1"


def driver_release(branch: str, codename: str = "") -> str:
    """The release of a branch this archive installs (R580's when the branch is unknown here)."""
    own = ARCHIVE_VERSIONS.get(codename, {}).get(branch)
    return own or DRIVER_VERSIONS.get(branch, DRIVER_VERSIONS["580"])


def is_driver(name: str) -> bool:
    return name.startswith(("nvidia-driver-", "nvidia-open", "cuda-drivers", *DEBIAN_DKMS)) and (
        "pinning" not in name
    )


def _os_release(sandbox: Sandbox, key: str) -> str:
    path = sandbox.path("/etc/os-release")
    found = re.search(rf"^{key}=\"?([^\"\n]*)", path.read_text() if path.exists() else "", re.M)
    return found.group(1) if found else ""


def codename(sandbox: Sandbox) -> str:
    return _os_release(sandbox, "VERSION_CODENAME")


ARCHIVES = {"ubuntu": "http://archive.ubuntu.com/ubuntu", "debian": "http://deb.debian.org/debian"}


def archive_hit(sandbox: Sandbox) -> str:
    """The line ``apt-get update`` prints for the machine's own release: its archive and codename
    from os-release (a derivative names its base in ID_LIKE), never another release's."""
    ids = [_os_release(sandbox, "ID"), *_os_release(sandbox, "ID_LIKE").split()]
    archive = next((ARCHIVES[i] for i in ids if i in ARCHIVES), ARCHIVES["debian"])
    release = _os_release(sandbox, "UBUNTU_CODENAME") or codename(sandbox) or "stable"
    return f"Hit:1 {archive} {release} InRelease"


def uses_apt(sandbox: Sandbox) -> bool:
    ids = {_os_release(sandbox, "ID"), *_os_release(sandbox, "ID_LIKE").split()}
    return bool(ids & {"debian", "ubuntu"})


def touch(sandbox: Sandbox, absolute: str, content: str = "") -> None:
    path = sandbox.path(absolute)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)


def kernels(sandbox: Sandbox) -> list[str]:
    listed = {p.name for p in sandbox.path("/lib/modules").glob("*") if p.is_dir()}
    listed |= {
        d.split("/")[3]
        for d in sandbox.json("empty_dirs.json", [])
        if d.startswith("/lib/modules/") and d.count("/") == 3
    }
    return sorted(listed)


def has_headers(sandbox: Sandbox, kernel: str) -> bool:
    return f"/lib/modules/{kernel}/build" in sandbox.links()


def headers_package(sandbox: Sandbox, name: str) -> str | None:
    """The kernel a headers package is for, if that kernel exists here."""
    match = re.fullmatch(r"(?:linux-headers|kernel-devel|kernel-headers)-(.+)", name)
    if not match or match.group(1) not in kernels(sandbox):
        return None
    return match.group(1)


def install_driver(sandbox: Sandbox, fail_dkms: bool) -> list[str]:
    """DKMS builds nvidia.ko for every installed kernel with headers, skipping the others (as
    DKMS does, with a warning); ``fail_dkms`` makes the build itself fail. Returns the output."""
    lines = []
    for kernel in kernels(sandbox):
        if not has_headers(sandbox, kernel):
            lines.append(
                f"Module build for kernel {kernel} was skipped: its kernel headers do not seem to be installed."
            )
        elif fail_dkms:
            lines.append(f"Error! Bad return status for module build on kernel: {kernel} (x86_64)")
            lines.append(
                f"Consult /var/lib/dkms/nvidia/{DRIVER_VERSIONS['580']}/build/make.log for more information."
            )
        else:
            touch(sandbox, f"/lib/modules/{kernel}/updates/dkms/nvidia.ko.zst")
            lines += ["nvidia.ko.zst:", f" - Installing to /lib/modules/{kernel}/updates/dkms/"]
    touch(sandbox, "/usr/bin/nvidia-smi")
    touch(
        sandbox,
        "/usr/lib/modprobe.d/nvidia-kernel-common.conf",
        "blacklist nouveau\noptions nouveau modeset=0\n",
    )
    return lines


def apply_package(sandbox: Sandbox, name: str, lines: list[str]) -> None:
    if kernel := headers_package(sandbox, name):
        sandbox.set_link(f"/lib/modules/{kernel}/build", f"/usr/src/linux-headers-{kernel}")
    elif match := re.fullmatch(r"linux-modules-nvidia-\d+-server(?:-open)?-(.+)", name):
        touch(sandbox, f"/lib/modules/{match.group(1)}/kernel/nvidia-580srv/nvidia.ko")
    elif name == "cuda-keyring":
        keyring = "/usr/share/keyrings/cuda-archive-keyring.gpg"
        source = f"deb [signed-by={keyring}] https://developer.download.nvidia.com/compute/cuda/repos/x86_64/ /\n"
        touch(sandbox, "/etc/apt/sources.list.d/cuda-x86_64.list", source)
    elif match := re.fullmatch(r"cuda-toolkit-(\d+)-(\d+)", name):
        touch(sandbox, f"/usr/local/cuda-{match.group(1)}.{match.group(2)}/bin/nvcc")
    elif match := re.fullmatch(r"python(3\.1\d)", name):
        touch(sandbox, f"/usr/bin/python{match.group(1)}")
    elif name in ("docker.io", "docker-ce"):
        touch(sandbox, "/usr/bin/docker")
    lines.append(f"Setting up {name} ({version_for(name, codename(sandbox))}) ...")


def install(
    sandbox: Sandbox, state: SimState, names: list[str], fail_dkms: bool
) -> tuple[SimState, list[str], int]:
    """apt-get/dnf install: (new state, output, exit code)."""
    unknown = [
        n
        for n in names
        if not known(n)
        or (
            n.startswith(("linux-headers-", "kernel-devel-", "kernel-headers-"))
            and not headers_package(sandbox, n)
        )
    ]
    if unknown:
        return state, [f"E: Unable to locate package {unknown[0]}"], 100
    lines = [
        "Reading package lists...",
        "Building dependency tree...",
        "Reading state information...",
    ]
    packages = dict(state.packages)
    release = codename(sandbox)
    for name in names:
        packages[name] = version_for(name, release)
        apply_package(sandbox, name, lines)
    state = dataclasses.replace(state, packages=packages)
    drivers = [n for n in names if is_driver(n)]
    signed = any(n.startswith("linux-modules-nvidia") for n in names)
    if drivers:
        # The driver's packages ask for a reboot as Ubuntu's do (update-notifier), naming themselves.
        touch(sandbox, "/run/reboot-required", "*** System restart required ***\n")
        touch(sandbox, "/run/reboot-required.pkgs", "".join(f"{n}\n" for n in drivers))
    if drivers and not signed:
        output = install_driver(sandbox, fail_dkms)
        lines += output
        if any(line.startswith("Error!") for line in output):
            lines += [
                f"dpkg: error processing package nvidia-dkms-{drivers[0].split('-')[2]} (--configure):",
                "E: Sub-process /usr/bin/dpkg returned an error code (1)",
            ]
            return dataclasses.replace(state, dpkg_interrupted=True), lines, 100
    elif drivers:
        touch(sandbox, "/usr/bin/nvidia-smi")
    return state, lines, 0


def environment(sandbox: Sandbox, path: str, python: str, with_pip: bool = True) -> None:
    """A venv as ``python -m venv`` leaves it; without ensurepip it stops before pip (B3)."""
    touch(
        sandbox,
        f"{path}/pyvenv.cfg",
        f"home = /usr/bin\ninclude-system-site-packages = false\nversion = {python}.3\n",
    )
    touch(sandbox, f"{path}/bin/python")
    site = sandbox.path(f"{path}/lib/python{python}/site-packages")
    site.mkdir(parents=True, exist_ok=True)
    if with_pip:
        (site / "pip-24.0.dist-info").mkdir(exist_ok=True)


def env_python(sandbox: Sandbox, env: str) -> str | None:
    cfg = sandbox.path(f"{env}/pyvenv.cfg")
    if cfg.exists():
        match = re.search(r"^version\s*=\s*(\d+\.\d+)", cfg.read_text(), re.MULTILINE)
        return match.group(1) if match else None
    meta = sandbox.path(f"{env}/conda-meta")
    for item in meta.glob("python-*.json") if meta.exists() else ():
        return ".".join(item.name.split("-")[1].split(".")[:2])
    return None


def pip_install(sandbox: Sandbox, env: str, args: list[str], pypi_variant: str = "") -> list[str]:
    """pip install of pins or wheel files; ``pypi_variant``: the CUDA build PyPI's untagged torch
    wheel is (a hashes file's set), for pins that name no local tag."""
    python = env_python(sandbox, env) or "3.12"
    site = sandbox.path(f"{env}/lib/python{python}/site-packages")
    site.mkdir(parents=True, exist_ok=True)
    index = next((args[i + 1] for i, a in enumerate(args) if a == "--index-url"), "")
    local = index.rsplit("/", 1)[-1] if "download.pytorch.org" in index else ""
    lines = [f"Looking in indexes: {index}"] if index else []
    installed = []
    for pin in (a for a in args if "==" in a or a.endswith(".whl")):
        name, version, variant = wheel_or_pin(pin, local)
        variant = variant or pypi_variant
        tag = f"+{local}" if local and name in ("torch", "torchvision", "torchaudio") else ""
        for old in site.glob(f"{name}-*.dist-info"):  # a recorded one holds its METADATA
            shutil.rmtree(old)
        (site / f"{name}-{version}{tag}.dist-info").mkdir()
        if name == "torch":  # what the doctor reads: torch.__version__ and torch.version.cuda
            write_torch_version(site, f"{version}{tag}", variant)
        shown = (
            pin
            if pin.endswith(".whl")
            else f"{pin}\n  Downloading {name}-{version}{tag}-cp{python.replace('.', '')}-linux_x86_64.whl"
        )
        lines.append(f"{'Processing' if pin.endswith('.whl') else 'Collecting'} {shown}")
        installed.append(f"{name}-{version}")
    lines.append("Successfully installed " + " ".join(installed))
    return lines


def wheel_or_pin(word: str, local: str) -> tuple[str, str, str]:
    """(name, version, CUDA variant) of ``name==version`` or of a wheel file's path.

    A checked wheel lies in a folder named after its set (``torch-2.14.1-cu130``): PyPI's torch
    wheel carries no ``+cu130``, but the build it is has that variant's CUDA.
    """
    if not word.endswith(".whl"):
        name, version = word.split("==")
        return name, version, local
    folder, file = word.rsplit("/", 2)[-2:]
    name, version = file.split("-")[:2]
    found = re.search(r"-(cu\d+)$", folder)
    return name, version, found.group(1) if found else ""


def pip_download(sandbox: Sandbox, env: str, args: list[str]) -> list[str]:
    """pip download --require-hashes -r FILE --dest DIR: each set's wheel for this Python.

    The wheel named in the file's ``# wheel`` lines for the environment's Python; its content is
    a stand-in (the hashes are pip's to check, and only a real download has them).
    """
    python = "cp" + (env_python(sandbox, env) or "3.12").replace(".", "")
    uname = sandbox.json("commands.json", {}).get("uname -m", {})
    arch = str(uname.get("stdout", "x86_64")).strip() or "x86_64"
    dest = sandbox.path(args[args.index("--dest") + 1])
    text = sandbox.path(args[args.index("-r") + 1]).read_text()
    dest.mkdir(parents=True, exist_ok=True)
    lines = []
    for line in text.splitlines():
        found = re.fullmatch(r"# wheel (\S+\.whl) sha256:[0-9a-f]{64}", line)
        if found and f"-{python}-{python}-" in found.group(1) and arch in found.group(1):
            (dest / found.group(1)).write_text(f"simulated wheel {found.group(1)}\n")
            lines.append(f"Saved {relative(dest / found.group(1), sandbox)}")
    return [*lines, "Successfully downloaded"]


def uv_pip_install(sandbox: Sandbox, args: list[str]) -> tuple[list[str], int]:
    """uv pip install --python ENV/bin/python [--index-url URL] [--verify-hashes -r FILE] [PINS].

    A hashes file's pins are installed, PyPI's torch as the file's set (``torch-2.14.1-cu130``);
    as uv checks the wheels against the file, a torch set whose file lists no wheel for the
    environment's Python and CPU fails, as uv's hash check would (pip's file, named for no CUDA
    build, pins one wheel for every Python).
    """
    env = args[args.index("--python") + 1].removesuffix("/bin/python")
    words = [a for a in args if a not in ("--verify-hashes", "--no-cache")]
    pins = [a for a in words if "==" in a and not a.startswith("-")]
    variant = ""
    if "-r" in words:
        file = sandbox.path(words[words.index("-r") + 1])
        text = file.read_text()
        found = re.search(r"-(cu\d+|cpu)\.hashes\.txt$", file.name)
        variant = found.group(1) if found else ""
        pins += re.findall(r"^([A-Za-z0-9_.-]+==[^\s\\]+)", text, re.MULTILINE)
        python = "cp" + (env_python(sandbox, env) or "3.12").replace(".", "")
        uname = sandbox.json("commands.json", {}).get("uname -m", {})
        arch = str(uname.get("stdout", "x86_64")).strip() or "x86_64"
        listed = re.findall(r"^# wheel (\S+\.whl) sha256:[0-9a-f]{64}$", text, re.MULTILINE)
        for name in (p.split("==")[0] for p in pins if variant):  # a torch set: a wheel per Python
            if not any(
                w.startswith(f"{name}-") and f"-{python}-{python}-" in w and arch in w
                for w in listed
            ):
                return [f"error: no wheel of {name} in {file.name} matches {python} on {arch}: "
                        "hash mismatch"], 1  # fmt: skip
    again = {words[i + 1] for i, word in enumerate(words[:-1]) if word == "--reinstall-package"}
    pins = [pin for pin in pins if pin.split("==")[0] in again or not satisfied(sandbox, env, pin)]
    index = words[words.index("--index-url") + 1] if "--index-url" in words else ""
    lines = pip_install(sandbox, env, ["--index-url", index, *pins] if index else pins, variant)
    installed = lines[-1].removeprefix("Successfully installed ").split()
    resolved = [f"Resolved {len(installed)} packages", f"Installed {len(installed)} packages"]
    return resolved + [f" + {p.replace('-', '==', 1)}" for p in installed], 0


def satisfied(sandbox: Sandbox, env: str, pin: str) -> bool:
    """As uv judges a pin against what is installed (PEP 440): ``torch==2.14.1`` is met by
    ``2.14.1`` and by ``2.14.1+cu128``; ``torch==2.14.1+cu126`` only by itself. uv keeps a
    package that satisfies its pin unless told to install it again (``--reinstall-package``)."""
    name, _, wanted = pin.partition("==")
    site = sandbox.path(f"{env}/lib/python{env_python(sandbox, env) or '3.12'}/site-packages")
    for info in site.glob(f"{name}-*.dist-info") if site.exists() else ():
        have = info.name.removesuffix(".dist-info").split("-", 1)[1]
        if have == wanted or ("+" not in wanted and have.split("+")[0] == wanted):
            return True
    return False


def write_torch_version(site: Path, version: str, variant: str) -> None:
    """torch/version.py as the wheel ships it."""
    cuda = f"'{variant_cuda(variant)}'" if is_cuda_variant(variant) else "None"
    folder = site / "torch"
    folder.mkdir(exist_ok=True)
    (folder / "version.py").write_text(
        "from typing import Optional\n\n"
        "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'xpu']\n"
        f"__version__ = '{version}'\ndebug = False\ncuda: Optional[str] = {cuda}\n"
        "git_version = '5811a8d7da873dd699ff6687092c225caffcf1bb'\n"
        "hip: Optional[str] = None\nxpu: Optional[str] = None\n"
    )


def installed_torch(sandbox: Sandbox, env: str) -> str | None:
    """The torch release in the environment at ``env``: a venv's or conda env's site-packages,
    or ``env`` itself when it is a site folder (a distribution's dist-packages, Lambda Stack)."""
    python = env_python(sandbox, env)
    site = sandbox.path(f"{env}/lib/python{python}/site-packages")
    found = sorted(site.glob("torch-*.dist-info")) if site.exists() else []
    if found:
        return found[0].name[len("torch-") : -len(".dist-info")].split("+")[0]
    version_py = sandbox.path(f"{env}/torch/version.py")
    said = version_py.read_text(errors="replace") if version_py.is_file() else ""
    version = re.search(r"""__version__\s*=\s*['"]([^'"+]+)""", said)
    return version.group(1) if version else None


def relative(path: Path, sandbox: Sandbox) -> str:
    return "/" + str(path.relative_to(sandbox.root))
