"""The PyTorch installs a person already has, found from files in a fixed list of places.

Where people's torch lives: the ``python3`` first on the session's PATH and its active venv or
conda environment (VIRTUAL_ENV, CONDA_PREFIX: under sudo only when sudo passed them on), conda
installs in the usual places with their environments, venvs in the usual places (~/.venv,
/opt/*/.venv, /opt/*/venv, a venv that is /opt/* itself), and torch in a system Python's
dist-packages (Lambda Stack's debs, pip as root). For each: its torch, torchvision and torchaudio
versions and the CUDA torch was built for, from their version.py files.

Bounded, because it runs before every step and on machines people did not set up for us: a
fixed list of places at a fixed depth, never a walk of the file system; at most ``LIST_LIMIT``
entries of any folder listed; files read up to a cap; symlinks followed at most ``LINK_HOPS``
times. It never runs a Python (the doctor does, on purpose, for the arch list) and never lists
gpuwizard's own environments (``PythonEnv.environments`` has those).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from gpuwizard.core.facts import Interpreter
from gpuwizard.core.paths import PREFIX
from gpuwizard.core.torch_envs import TorchEnv, TorchEnvKind, cuda_of_local_tag, parse_version_py
from gpuwizard.machine.host import Host, HostPathError

LIST_LIMIT = 64
"""Entries read from /opt, a conda envs/ folder or a lib/ folder: a folder of a million names
costs no more than this."""
SITE_LIST_LIMIT = 4096
"""Entries read from a site-packages folder, only when torch has no version.py to read."""
PATH_ENTRIES = 32
"""PATH entries looked at for python3 (a PATH is rarely longer than a dozen)."""
LINK_HOPS = 8
"""Symlinks followed from python3 to the interpreter it is (a loop stops here)."""
FILE_LIMIT = 64 * 1024
"""Bytes read of a version.py, pyvenv.cfg or /etc/passwd line: each is a few hundred."""
PASSWD_LIMIT = 1024 * 1024

CONDA_ROOTS = ("/opt/conda", "/opt/miniconda3", "/opt/miniforge3", "/opt/anaconda3")
HOME_CONDA = ("miniconda3", "anaconda3", "miniforge3")
OPT_VENVS = ("", "/.venv", "/venv")

_PYTHON_NAME = re.compile(r"^python(3\.[0-9]{1,2})$")
_PYVENV_VERSION = re.compile(r"^version(?:_info)?\s*=\s*([0-9]+\.[0-9]+)", re.MULTILINE)
_DIST_INFO = re.compile(r"^(torch|torchvision|torchaudio)-([^-]{1,64})\.(?:dist|egg)-info$")
_CUDA_VERSION = re.compile(r"[0-9]{1,2}\.[0-9]{1,2}")
_PASSWD_HOME = re.compile(r"^([^:\n]*):[^:\n]*:[^:\n]*:[^:\n]*:[^:\n]*:([^:\n]*):", re.MULTILINE)


@dataclass(frozen=True)
class Place:
    """Where a torch may be: an interpreter and the folders it imports from."""

    path: str
    kind: TorchEnvKind
    python: str
    python_version: str | None
    sites: tuple[str, ...]
    found_by: str
    on_path: bool = False


def absolute(path: str | None) -> str | None:
    """A clean absolute host path, or None for anything else (relative, NUL, too long)."""
    if not path or not path.startswith("/") or "\0" in path or len(path) > 4096:
        return None
    return posixpath.normpath(path)


def path_entries(path_variable: str) -> list[str]:
    """The first ``PATH_ENTRIES`` absolute folders of a PATH, each once."""
    entries: list[str] = []
    for raw in path_variable.split(":")[: PATH_ENTRIES * 4]:
        entry = absolute(raw)
        if entry and entry not in entries:
            entries.append(entry)
        if len(entries) == PATH_ENTRIES:
            break
    return entries


def _exists(host: Host, path: str) -> bool:
    try:
        return host.exists(path)
    except HostPathError:
        return False


def first_python3(host: Host) -> str | None:
    """The ``python3`` a shell would run: the first PATH folder that has one."""
    for folder in path_entries(host.environ.get("PATH", "")):
        candidate = posixpath.join(folder, "python3")
        if _exists(host, candidate):
            return candidate
    return None


def pyvenv_version(host: Host, prefix: str) -> str | None:
    text = host.read_text(f"{prefix}/pyvenv.cfg", FILE_LIMIT) or ""
    found = _PYVENV_VERSION.search(text)
    return found.group(1) if found else None


def lib_versions(host: Host, prefix: str) -> list[str]:
    """The pythonX.Y folders under prefix/lib (conda environments, venvs without a version)."""
    names = host.listdir(f"{prefix}/lib", LIST_LIMIT)
    return [m.group(1) for name in names if (m := _PYTHON_NAME.match(name))]


def interpreter_in(host: Host, prefix: str) -> str:
    for name in ("python", "python3"):
        if _exists(host, f"{prefix}/bin/{name}"):
            return f"{prefix}/bin/{name}"
    return f"{prefix}/bin/python"


def env_place(host: Host, prefix: str, kind: TorchEnvKind, found_by: str) -> Place:
    """A venv's or conda environment's place: its interpreter and its site-packages."""
    version = pyvenv_version(host, prefix) if kind == "venv" else None
    versions = [version] if version else lib_versions(host, prefix)
    sites = tuple(f"{prefix}/lib/python{v}/site-packages" for v in versions)
    return Place(
        prefix,
        kind,
        interpreter_in(host, prefix),
        versions[0] if versions else None,
        sites,
        found_by,
    )


def prefix_place(host: Host, prefix: str, found_by: str) -> Place | None:
    """The environment at ``prefix``, when it is one (pyvenv.cfg or conda-meta)."""
    if _exists(host, f"{prefix}/pyvenv.cfg"):
        return env_place(host, prefix, "venv", found_by)
    if host.is_dir(f"{prefix}/conda-meta"):
        return env_place(host, prefix, "conda", found_by)
    return None


def system_sites(prefix: str, version: str) -> tuple[str, ...]:
    """Where a system interpreter's packages go: Debian's dist-packages (the distribution's and
    pip's as root, under /usr/local), then the upstream layout's site-packages (RHEL: lib64)."""
    sites = [f"{prefix}/lib/python3/dist-packages"]
    if prefix == "/usr":
        sites.append(f"/usr/local/lib/python{version}/dist-packages")
    sites += [
        f"{prefix}/lib/python{version}/dist-packages",
        f"{prefix}/lib/python{version}/site-packages",
        f"{prefix}/lib64/python{version}/site-packages",
    ]
    return tuple(dict.fromkeys(sites))


def system_place(host: Host, interpreter: str, found_by: str) -> Place | None:
    """A system interpreter (/usr/bin/python3.12) and its package folders; a bare python3 that
    is no link takes its version from the one pythonX.Y folder of its prefix's lib/."""
    prefix = posixpath.dirname(posixpath.dirname(interpreter))
    match = _PYTHON_NAME.match(posixpath.basename(interpreter))
    versions = [match.group(1)] if match else lib_versions(host, prefix)
    if len(versions) != 1:
        return None
    return Place(
        prefix, "system", interpreter, versions[0], system_sites(prefix, versions[0]), found_by
    )


def place_of_interpreter(host: Host, exe: str, found_by: str) -> Place | None:
    """The environment a python3 belongs to: a venv or conda environment beside one of the
    links on the way, else the system interpreter the links end at."""
    current, seen = exe, {exe}
    for _ in range(LINK_HOPS):
        place = prefix_place(host, posixpath.dirname(posixpath.dirname(current)), found_by)
        if place is not None:
            return replace(place, python=exe)
        target = host.readlink(current)
        following = absolute(posixpath.join(posixpath.dirname(current), target or ""))
        if target is None or following is None or following in seen:
            break  # the interpreter itself, or a loop
        current = following
        seen.add(current)
    return system_place(host, current, found_by)


def session_places(host: Host) -> list[Place]:
    """The session's own: the first python3 on PATH, the active venv and conda environment."""
    places: list[Place] = []
    if (exe := first_python3(host)) and (
        place := place_of_interpreter(host, exe, "first python3 on PATH")
    ):
        places.append(replace(place, on_path=True))
    for key in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if (prefix := absolute(host.environ.get(key))) and (
            place := prefix_place(host, prefix, key)
        ):
            places.append(place)
    return places


def home_of(host: Host, user: str) -> str | None:
    """A user's home from /etc/passwd (else /home/USER), for a name that is one."""
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}", user):
        return None
    text = host.read_text("/etc/passwd", PASSWD_LIMIT) or ""
    found = next((home for name, home in _PASSWD_HOME.findall(text) if name == user), None)
    return absolute(found) or f"/home/{user}"


def homes(host: Host) -> list[str]:
    """root's, the session's HOME and the sudo user's: the homes a person here works in."""
    found = ["/root", absolute(host.environ.get("HOME"))]
    if user := host.environ.get("SUDO_USER"):
        found.append(home_of(host, user))
    return list(dict.fromkeys(h for h in found if h))


def conda_places(host: Host, home_dirs: Sequence[str]) -> list[Place]:
    """Conda installs in the usual places: their base environment and each named one."""
    roots = [*CONDA_ROOTS, *(f"{h}/{name}" for h in home_dirs for name in HOME_CONDA)]
    places = []
    for root in roots:
        if not host.is_dir(f"{root}/conda-meta"):
            continue
        places.append(env_place(host, root, "conda", f"conda install {root}"))
        for name in host.listdir(f"{root}/envs", LIST_LIMIT):
            if place := prefix_place(host, f"{root}/envs/{name}", f"conda install {root}"):
                places.append(place)
    return places


def venv_places(host: Host, home_dirs: Sequence[str]) -> list[Place]:
    """~/.venv of each home, and /opt/X, /opt/X/.venv, /opt/X/venv (not gpuwizard's)."""
    candidates = [(f"{h}/.venv", f"home {h}") for h in home_dirs]
    for name in host.listdir("/opt", LIST_LIMIT):
        if f"/opt/{name}" != PREFIX:
            candidates += [(f"/opt/{name}{tail}", "venv in /opt") for tail in OPT_VENVS]
    return [
        p for path, why in candidates if (p := prefix_place(host, path, why)) and p.kind == "venv"
    ]


def system_places(
    host: Host, interpreters: Iterable[Interpreter], home_dirs: Sequence[str]
) -> list[Place]:
    """Each system interpreter's package folders, and each home's ~/.local for its version."""
    places = [p for i in interpreters if (p := system_place(host, i.path, "system dist-packages"))]
    versions = dict.fromkeys(i.version for i in interpreters)
    for home in home_dirs:
        for version in versions:
            site = f"{home}/.local/lib/python{version}/site-packages"
            places.append(
                Place(
                    f"{home}/.local",
                    "user",
                    f"/usr/bin/python{version}",
                    version,
                    (site,),
                    f"home {home}",
                )
            )
    return places


def package_version(host: Host, site: str, package: str, listing: Sequence[str]) -> str | None:
    """A package's version from its version.py, else from its dist-info or egg-info folder."""
    parsed = parse_version_py(host.read_text(f"{site}/{package}/version.py", FILE_LIMIT) or "")
    if parsed:
        return parsed[0]
    return next(
        (m.group(2) for n in listing if (m := _DIST_INFO.match(n)) and m.group(1) == package), None
    )


def torch_at(host: Host, place: Place, site: str) -> TorchEnv | None:
    """The torch installed in ``site``, when there is one."""
    parsed = parse_version_py(host.read_text(f"{site}/torch/version.py", FILE_LIMIT) or "")
    if parsed is None and not host.is_dir(f"{site}/torch"):
        return None
    listing = () if parsed else host.listdir(site, SITE_LIST_LIMIT)
    torch = parsed[0] if parsed else package_version(host, site, "torch", listing)
    if torch is None:
        return None
    cuda = parsed[1] if parsed else cuda_of_local_tag(torch)
    known = parsed is not None or cuda is not None or torch.endswith("+cpu")
    if cuda is not None and not _CUDA_VERSION.fullmatch(cuda):
        cuda, known = None, False  # a version.py that says something else: no build we know
    return TorchEnv(
        path=site if place.kind in ("system", "user") else place.path,
        kind=place.kind,
        python=place.python,
        python_version=_site_version(site) or place.python_version,
        site=site,
        torch=torch,
        torch_cuda=cuda,
        build_known=known,
        torchvision=package_version(host, site, "torchvision", listing),
        torchaudio=package_version(host, site, "torchaudio", listing),
        found_by=(place.found_by,),
        on_path=place.on_path,
    )


def _site_version(site: str) -> str | None:
    found = re.search(r"/python(3\.[0-9]{1,2})/", site)
    return found.group(1) if found else None


def merge(found: list[TorchEnv]) -> tuple[TorchEnv, ...]:
    """One entry per torch folder, in the order first found, with every way it was found."""
    by_site: dict[str, TorchEnv] = {}
    for env in found:
        seen = by_site.get(env.site)
        if seen is None:
            by_site[env.site] = env
            continue
        ways = tuple(dict.fromkeys((*seen.found_by, *env.found_by)))
        by_site[env.site] = replace(seen, found_by=ways, on_path=seen.on_path or env.on_path)
    return tuple(by_site.values())


def read_torch_envs(host: Host, interpreters: Iterable[Interpreter]) -> tuple[TorchEnv, ...]:
    """Every PyTorch found in the fixed places, the session's first."""
    home_dirs = homes(host)
    places = [
        *session_places(host),
        *conda_places(host, home_dirs),
        *venv_places(host, home_dirs),
        *system_places(host, interpreters, home_dirs),
    ]
    found = [
        env
        for place in places
        if not place.path.startswith(PREFIX + "/")
        for site in place.sites
        if (env := torch_at(host, place, site))
    ]
    return merge(found)
