"""The operations a plan's steps carry out: a closed set of typed values, each saying what it means.

A step declares "install these packages", "download this file, checked against that pin",
"enable this service"; never a bag of argv that a consumer must read back. Each consumer (the
runner's executor, deploy.sh, the Dockerfile, the Ansible playbook, the review) matches on the
type and ends with ``assert_never``, so mypy proves every operation is handled everywhere.
``command()`` is the one place an operation becomes a program's argv and environment: the
executor runs that, deploy.sh writes it, the review shows it. Every Python it starts is isolated
(``-I``): nothing in the current folder, PYTHONPATH or a user's site-packages is imported.
``Command`` is the explicit open fallback, for programs no consumer needs to understand. Pure
data: nothing here runs, reads the machine or holds a secret (only ``SecretRef`` names,
resolved by the runner in memory).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal

# Consumers end their match on an operation with assert_never (in typing from Python 3.11).
if sys.version_info >= (3, 11):
    from typing import assert_never as assert_never
else:  # pragma: no cover - Python 3.10
    from typing_extensions import assert_never as assert_never

from gpuwizard.core.isolation import ISOLATED
from gpuwizard.core.paths import PYTHONS_DIR

# Environment for every apt/dpkg call: no debconf questions, keep modified config files, no
# needrestart dialogs that restart services mid-step (reliability.md §3.3, §1.3).
APT_ENV: Mapping[str, str] = {
    "DEBIAN_FRONTEND": "noninteractive",
    "UCF_FORCE_CONFFOLD": "1",
    "NEEDRESTART_MODE": "l",
    "NEEDRESTART_SUSPEND": "1",
    "APT_LISTCHANGES_FRONTEND": "none",
}
APT_LOCK_TIMEOUT_S = 600
_APT_LOCK = ("-o", f"DPkg::Lock::Timeout={APT_LOCK_TIMEOUT_S}")
_KEEP_CONFIG = ("-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold")
"""Keep a locally modified configuration file; take the package's for one never touched."""
_NO_PROGRESS_BAR = ("-o", "Dpkg::Progress-Fancy=0")
UV_ENV: Mapping[str, str] = {
    "UV_PYTHON_INSTALL_DIR": PYTHONS_DIR,
    "UV_NO_CONFIG": "1",
    "UV_SYSTEM_CERTS": "1",
}
"""uv keeps the CPython it installs under gpuwizard's prefix, reads no user configuration, and
trusts the machine's certificate store (UV_SYSTEM_CERTS: docs.astral.sh/uv/concepts/
authentication/certificates, read 2026-12-05) as pip does, not only its bundled roots: a server
behind a proxy with its own CA, put in the system store by its admin, works with uv as with pip
(a chroot on this project's network needed it: the chroot tier's uv said "UnknownIssuer")."""
DOWNLOAD_TOOL = "gpuwizard-fetch"
"""gpuwizard's own downloader: URL -> file, checked against its pin, atomic (runner/fetch.py)."""


@dataclass(frozen=True)
class SecretRef:
    """A secret by name ("mok-password"); its value lives only in the runner's memory."""

    KIND: ClassVar[str] = "secret"
    name: str
    prompt: str
    """What the user is asked, in their words."""


class _Program:
    """What every operation that runs a program shares: its command, and how a person reads it."""

    timeout_s: float
    """Hard deadline for the whole command."""
    silence_timeout_s: float
    """No output for this long: show the last lines (usually a prompt) and stop."""

    def command(self) -> Command:
        """The program this operation runs, with its environment and limits."""
        raise NotImplementedError

    def display(self) -> str:
        """The command as a person reads it; an inline script shows as its size, not its text."""
        run = self.command()
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in run.env.items() if k not in APT_ENV)
        shown = [f"<script, {a.count(chr(10)) + 1} lines>" if "\n" in a else a for a in run.argv]
        command = shlex.join(shown)
        return f"{env} {command}" if env else command


@dataclass(frozen=True)
class Command(_Program):
    """Any other program: argv[0] is a tool name, resolved through the host's tool registry.

    The open fallback. Use it for a program whose meaning no consumer needs (cloud-init's wait,
    modprobe, an initramfs rebuild, a probe script); an operation a consumer must understand
    gets its own type instead.
    """

    KIND: ClassVar[str] = "command"
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    answers: Mapping[str, str | SecretRef] = field(default_factory=dict)
    """Prompt regex -> reply: known prompts are answered, secrets come from the user."""
    creates: str | None = None
    """Skip when this path exists (exporters use it too)."""
    timeout_s: float = 3600
    """Hard deadline for the whole command."""
    silence_timeout_s: float = 600
    """No output for this long: show the last lines (usually a prompt) and stop."""
    ok_codes: tuple[int, ...] = (0,)
    """Exit codes that mean success (``cloud-init status --wait`` exits 2 when degraded)."""

    def command(self) -> Command:
        return self


def _run(argv: tuple[str, ...], limits: _Program, env: Mapping[str, str] | None = None) -> Command:
    """A typed operation's command, with the operation's own limits."""
    return Command(
        argv,
        env=dict(env or {}),
        timeout_s=limits.timeout_s,
        silence_timeout_s=limits.silence_timeout_s,
    )


# ----------------------------------------------------------------------------- Debian packages
@dataclass(frozen=True)
class AptUpdate(_Program):
    """Refresh the package lists. The runner retries it while another apt holds the lists lock:
    apt's lock timeout does not cover that lock (netlab#2473)."""

    KIND: ClassVar[str] = "apt-update"
    timeout_s: float = 900
    silence_timeout_s: float = 600

    def command(self) -> Command:
        return _run(("apt-get", "-q", "update"), self, APT_ENV)


@dataclass(frozen=True)
class AptInstall(_Program):
    """Install packages: non-interactive, waiting for the dpkg lock, keeping local config files.

    ``recommends=False`` adds ``--no-install-recommends``: a step that says why in its own text.
    """

    KIND: ClassVar[str] = "apt-install"
    packages: tuple[str, ...]
    recommends: bool = True
    timeout_s: float = 3600
    silence_timeout_s: float = 600

    def command(self) -> Command:
        no_recommends = () if self.recommends else ("--no-install-recommends",)
        argv = ("apt-get", "-q", "-y", *_APT_LOCK, *_KEEP_CONFIG, *_NO_PROGRESS_BAR)
        return _run((*argv, *no_recommends, "install", *self.packages), self, APT_ENV)

    def image_command(self) -> Command:
        """As an image build runs it: never the recommended extras."""
        argv = ("apt-get", "-q", "-y", *_APT_LOCK, *_KEEP_CONFIG, *_NO_PROGRESS_BAR, "install")
        return _run((*argv, "--no-install-recommends", *self.packages), self, APT_ENV)


@dataclass(frozen=True)
class AptUpgrade(_Program):
    """Upgrade every package, the kernel included (``full-upgrade`` may add or remove one)."""

    KIND: ClassVar[str] = "apt-upgrade"
    timeout_s: float = 3600
    silence_timeout_s: float = 600

    def command(self) -> Command:
        argv = ("apt-get", "-q", "-y", *_APT_LOCK, *_KEEP_CONFIG, "full-upgrade")
        return _run(argv, self, APT_ENV)


@dataclass(frozen=True)
class AptHold(_Program):
    """Hold packages at their installed version (``apt-mark hold``)."""

    KIND: ClassVar[str] = "apt-hold"
    packages: tuple[str, ...]
    timeout_s: float = 120
    silence_timeout_s: float = 600

    def command(self) -> Command:
        return _run(("apt-mark", "hold", *self.packages), self)


@dataclass(frozen=True)
class DpkgConfigure(_Program):
    """Finish what an interrupted dpkg left unconfigured, keeping local config files."""

    KIND: ClassVar[str] = "dpkg-configure"
    timeout_s: float = 3600
    silence_timeout_s: float = 600

    def command(self) -> Command:
        argv = ("dpkg", "--force-confdef", "--force-confold", "--configure", "-a")
        return _run(argv, self, APT_ENV)


@dataclass(frozen=True)
class AptFixBroken(_Program):
    """Reinstall what dpkg left half-installed; refuse (rather than do) any removal."""

    KIND: ClassVar[str] = "apt-fix-broken"
    timeout_s: float = 3600
    silence_timeout_s: float = 600

    def command(self) -> Command:
        argv = ("apt-get", "-q", "-y", "--no-remove", *_APT_LOCK, *_KEEP_CONFIG, "-f", "install")
        return _run(argv, self, APT_ENV)


# ------------------------------------------------------------------------ RHEL-family packages
@dataclass(frozen=True)
class DnfInstall(_Program):
    KIND: ClassVar[str] = "dnf-install"
    packages: tuple[str, ...]
    timeout_s: float = 3600
    silence_timeout_s: float = 600

    def command(self) -> Command:
        return _run(("dnf", "-y", "-q", "install", *self.packages), self)


@dataclass(frozen=True)
class DnfUpgrade(_Program):
    KIND: ClassVar[str] = "dnf-upgrade"
    timeout_s: float = 3600
    silence_timeout_s: float = 600

    def command(self) -> Command:
        return _run(("dnf", "-y", "-q", "upgrade"), self)


@dataclass(frozen=True)
class DnfModuleEnable(_Program):
    """Enable a module stream (``nvidia-driver:580-open``) before installing from it."""

    KIND: ClassVar[str] = "dnf-module-enable"
    stream: str
    timeout_s: float = 600
    silence_timeout_s: float = 600

    def command(self) -> Command:
        return _run(("dnf", "-y", "-q", "module", "enable", self.stream), self)


@dataclass(frozen=True)
class DnfVersionLock(_Program):
    """Lock a package spec at its version (the dnf versionlock plugin)."""

    KIND: ClassVar[str] = "dnf-versionlock"
    spec: str
    timeout_s: float = 600
    silence_timeout_s: float = 600

    def command(self) -> Command:
        return _run(("dnf", "versionlock", "add", self.spec), self)


# ------------------------------------------------------------------------------------ downloads
@dataclass(frozen=True)
class Sha256:
    """The file's SHA-256, from gpuwizard's pins."""

    KIND: ClassVar[str] = "sha256"
    value: str


@dataclass(frozen=True)
class Fingerprint:
    """A signing key's primary-key fingerprint, from gpuwizard's pins."""

    KIND: ClassVar[str] = "fingerprint"
    value: str


@dataclass(frozen=True)
class NoPin:
    """UNCONFIRMED: gpuwizard has no official checksum; trusted on HTTPS alone, with a warning."""

    KIND: ClassVar[str] = "unpinned"


DownloadCheck = Sha256 | Fingerprint | NoPin


@dataclass(frozen=True)
class Download(_Program):
    """Download to a file, atomically, checked against its pin; a mismatch deletes the file and
    fails the step. ``url`` may be ``pypi:NAME==VERSION`` (a wheel, with ``member`` the file
    taken out of it). A repository key (``dearmor`` or ``armor``; any ``Fingerprint``) must be
    exactly one primary key and is stored alone: binary for apt's ``signed-by`` (``dearmor``),
    else freshly armoured for dnf's ``gpgkey``; an UNCONFIRMED key is marked by those flags."""

    KIND: ClassVar[str] = "download"
    url: str
    dest: str
    check: DownloadCheck
    member: str | None = None
    dearmor: bool = False
    armor: bool = False
    timeout_s: float = 1800
    silence_timeout_s: float = 300

    def options(self) -> tuple[str, ...]:
        """The downloader's options after URL and destination (deploy.sh's gw_fetch takes them too)."""
        match self.check:
            case Sha256(value):
                check: tuple[str, ...] = ("--sha256", value)
            case Fingerprint(value):
                check = ("--fingerprint", value)
            case NoPin():
                check = ("--unpinned",)
            case _:  # pragma: no cover - exhaustive
                assert_never(self.check)
        member = ("--member", self.member) if self.member is not None else ()
        # --fingerprint alone already means an armoured key; --armor marks an UNCONFIRMED one.
        armored = self.armor and not isinstance(self.check, Fingerprint)
        form = ("--dearmor",) if self.dearmor else ("--armor",) if armored else ()
        return (*check, *member, *form)

    @property
    def is_key(self) -> bool:
        """A repository key: checked as one key and stored alone, pinned or not."""
        return self.dearmor or self.armor or isinstance(self.check, Fingerprint)

    def command(self) -> Command:
        return _run((DOWNLOAD_TOOL, self.url, self.dest, *self.options()), self)


# ------------------------------------------------------------------------- services and reboots
ServiceVerb = Literal["enable", "start", "restart"]


@dataclass(frozen=True)
class Service(_Program):
    KIND: ClassVar[str] = "service"
    verb: ServiceVerb
    unit: str
    timeout_s: float = 120
    silence_timeout_s: float = 600

    def command(self) -> Command:
        return _run(("systemctl", self.verb, self.unit), self)


@dataclass(frozen=True)
class Reboot(_Program):
    """Reboot the machine: the runner asks first, records the boot, and resumes after it."""

    KIND: ClassVar[str] = "reboot"
    timeout_s: float = 120
    silence_timeout_s: float = 600

    def command(self) -> Command:
        return _run(("reboot",), self)


# -------------------------------------------------------------------------- Python environments
@dataclass(frozen=True)
class PipInstall(_Program):
    """``ENV/bin/python -I -m pip install``: requirements (``name==version``) or wheel files."""

    KIND: ClassVar[str] = "pip-install"
    env: str
    """The environment's folder; its ``bin/python`` runs pip."""
    requirements: tuple[str, ...]
    index_url: str | None = None
    quiet: bool = False
    force_reinstall: bool = False
    """Reinstall even when present, so that pip must reach the index (pins pip itself)."""
    timeout_s: float = 3600
    silence_timeout_s: float = 900

    def command(self) -> Command:
        return _run(self._argv(()), self)

    def image_command(self) -> Command:
        """As an image build runs it: no download cache kept in the layer."""
        return _run(self._argv(("--no-cache-dir",)), self)

    def _argv(self, first: tuple[str, ...]) -> tuple[str, ...]:
        quiet = ("--quiet",) if self.quiet else ()
        force = ("--force-reinstall",) if self.force_reinstall else ()
        index = ("--index-url", self.index_url) if self.index_url is not None else ()
        pip = (f"{self.env}/bin/python", ISOLATED, "-m", "pip", "install")
        return (*pip, *first, *quiet, *force, *index, *self.requirements)


@dataclass(frozen=True)
class UvPipInstall(_Program):
    """``uv pip install --python ENV/bin/python``: requirements (``name==version``), or a
    requirements file whose hashes uv checks (``--verify-hashes``).

    ``--verify-hashes``, not ``--require-hashes``: uv's ``--require-hashes`` demands a hash for
    every package of the resolution, the dependencies included, which gpuwizard does not pin;
    ``--verify-hashes`` checks every hash the file gives (torch's and torchvision's wheels, as
    pip's ``download --require-hashes`` did) and fails on a mismatch or a wheel not listed.
    """

    KIND: ClassVar[str] = "uv-pip-install"
    uv: str
    env: str
    """The environment's folder; uv installs into its ``bin/python``."""
    requirements: tuple[str, ...] = ()
    index_url: str | None = None
    hashes_file: str | None = None
    """A requirements file with ``--hash`` lines, checked with ``--verify-hashes``."""
    reinstall: tuple[str, ...] = ()
    """Packages installed again even when one that satisfies the pin is there: ``==2.14.1`` is
    met by ``2.14.1+cu128`` (PEP 440), so a change of CUDA build at the same version would be
    audited and left as it was (uv checks hashes only of what it installs)."""
    timeout_s: float = 3600
    silence_timeout_s: float = 900

    def command(self) -> Command:
        return _run(self._argv(()), self, UV_ENV)

    def image_command(self) -> Command:
        """As an image build runs it: no download cache kept in the layer."""
        return _run(self._argv(("--no-cache",)), self, UV_ENV)

    def _argv(self, first: tuple[str, ...]) -> tuple[str, ...]:
        index = ("--index-url", self.index_url) if self.index_url is not None else ()
        hashes = ("--verify-hashes", "-r", self.hashes_file) if self.hashes_file is not None else ()
        uv = (self.uv, "pip", "install", *first, "--python", f"{self.env}/bin/python")
        again = tuple(word for name in self.reinstall for word in ("--reinstall-package", name))
        return (*uv, *again, *index, *hashes, *self.requirements)


@dataclass(frozen=True)
class PipDownload(_Program):
    """Download wheels only, each checked against the hashes in ``requirements_file`` as it
    arrives (``--require-hashes``), without their dependencies."""

    KIND: ClassVar[str] = "pip-download"
    env: str
    index_url: str
    dest: str
    requirements_file: str
    timeout_s: float = 3600
    silence_timeout_s: float = 900

    def command(self) -> Command:
        argv = (
            f"{self.env}/bin/python", ISOLATED, "-m", "pip", "download", "--quiet", "--no-deps",
            "--only-binary=:all:", "--require-hashes", "--index-url", self.index_url,
            "--dest", self.dest, "-r", self.requirements_file,
        )  # fmt: skip
        return _run(argv, self)


@dataclass(frozen=True)
class Venv(_Program):
    """A venv at ``path`` from the interpreter ``python``, made afresh (``--clear``)."""

    KIND: ClassVar[str] = "venv"
    python: str
    path: str
    timeout_s: float = 600
    silence_timeout_s: float = 600

    def command(self) -> Command:
        return _run((self.python, ISOLATED, "-m", "venv", "--clear", self.path), self)


@dataclass(frozen=True)
class UvVenv(_Program):
    """A venv at ``path``, made afresh: ``version`` is what uv's ``--python`` takes, a version of
    a standalone CPython uv installed, or an interpreter's path (``/usr/bin/python3.12``).

    Without ``--seed``: that would put the newest pip, setuptools and wheel from PyPI in it,
    unpinned; create-env installs the pinned pip by its hash instead.
    """

    KIND: ClassVar[str] = "uv-venv"
    uv: str
    version: str
    path: str
    timeout_s: float = 600
    silence_timeout_s: float = 600

    def command(self) -> Command:
        argv = (self.uv, "venv", "--clear", "--python", self.version, self.path)
        return _run(argv, self, UV_ENV)


@dataclass(frozen=True)
class UvPythonInstall(_Program):
    """A standalone CPython ``version``, installed by uv under gpuwizard's prefix."""

    KIND: ClassVar[str] = "uv-python-install"
    uv: str
    version: str
    timeout_s: float = 1800
    silence_timeout_s: float = 600

    def command(self) -> Command:
        return _run((self.uv, "python", "install", self.version), self, UV_ENV)


@dataclass(frozen=True)
class CondaCreate(_Program):
    """A conda environment at ``path`` with Python ``version`` and pip."""

    KIND: ClassVar[str] = "conda-create"
    conda: str
    path: str
    version: str
    timeout_s: float = 1800
    silence_timeout_s: float = 600

    def command(self) -> Command:
        argv = (self.conda, "create", "--yes", "--quiet", "--prefix", self.path)
        return _run((*argv, f"python={self.version}", "pip"), self)


@dataclass(frozen=True)
class MiniforgeInstall(_Program):
    """Run the Miniforge installer in batch mode into ``prefix``."""

    KIND: ClassVar[str] = "miniforge-install"
    installer: str
    prefix: str
    timeout_s: float = 1800
    silence_timeout_s: float = 600

    def command(self) -> Command:
        return _run(("bash", self.installer, "-b", "-p", self.prefix), self)


# ------------------------------------------------------------------------------- fetch ahead
APT_FETCH_TOOL = "gpuwizard-apt-fetch"
"""gpuwizard's apt prefetcher: apt's own URIs and SHA-256, into apt's cache (runner/aptfetch.py)."""


@dataclass(frozen=True)
class AptPrefetch(_Program):
    """Put the packages an ``apt-get install`` would download into apt's cache, ahead of the step.

    Not ``apt-get --download-only``: that takes the dpkg frontend lock (measured: it asks for
    /var/lib/dpkg/lock-frontend), so it would wait for, or hold up, the step running beside it.
    ``apt-get --print-uris`` takes no lock; gpuwizard downloads what it lists, each file checked
    against the SHA-256 from apt's signed index before it lands in apt's cache.
    """

    KIND: ClassVar[str] = "apt-prefetch"
    packages: tuple[str, ...]
    recommends: bool = True
    timeout_s: float = 3600
    silence_timeout_s: float = 600

    def command(self) -> Command:
        no_recommends = () if self.recommends else ("--no-install-recommends",)
        return _run((APT_FETCH_TOOL, *no_recommends, *self.packages), self, APT_ENV)


@dataclass(frozen=True)
class UvPrefetch(_Program):
    """Fill uv's cache with what a ``uv pip install`` will install, before its environment exists.

    uv installs into a scratch ``--target`` folder (removed afterwards) for the environment's
    Python version, resolving with any interpreter of this machine (its platform is the
    machine's); the wheels stay in uv's cache, checked against the same hashes file, and the
    step's own install then links them from there (measured: 0.3 s for torch and torchvision).
    """

    KIND: ClassVar[str] = "uv-prefetch"
    uv: str
    interpreter: str
    python_version: str
    target: str
    requirements: tuple[str, ...] = ()
    index_url: str | None = None
    hashes_file: str | None = None
    timeout_s: float = 3600
    silence_timeout_s: float = 900

    def command(self) -> Command:
        index = ("--index-url", self.index_url) if self.index_url is not None else ()
        hashes = ("--verify-hashes", "-r", self.hashes_file) if self.hashes_file is not None else ()
        where = ("--python", self.interpreter, "--python-version", self.python_version)
        argv = (self.uv, "pip", "install", *where, "--target", self.target)
        return _run((*argv, *index, *hashes, *self.requirements), self, UV_ENV)


Prefetch = AptPrefetch | UvPrefetch
"""What fetches ahead: cache only, never part of a plan's steps (runner/prefetch.py runs them)."""


# ---------------------------------------------------------------------------------------- files
@dataclass(frozen=True)
class WriteFile:
    """Write a whole file atomically (temp file, fsync, rename), with a mode."""

    KIND: ClassVar[str] = "write"
    path: str
    """Absolute on the target; the executor joins it to the host root."""
    content: str
    mode: int = 0o644
    backup: bool = False
    """Keep the previous content and put it back if the step fails (daemon.json)."""

    def display(self) -> str:
        return f"write {self.path} ({len(self.content.splitlines())} lines, mode {self.mode:o})"


Program = (
    AptUpdate | AptInstall | AptUpgrade | AptHold | DpkgConfigure | AptFixBroken
    | DnfInstall | DnfUpgrade | DnfModuleEnable | DnfVersionLock
    | Download | Service | Reboot
    | PipInstall | UvPipInstall | PipDownload | Venv | UvVenv | UvPythonInstall | CondaCreate | MiniforgeInstall
    | Command
)  # fmt: skip
"""Every operation that runs a program."""
Action = Program | WriteFile
"""The closed set a step's plan is made of."""


# ------------------------------------------------------------------------------------ care
@dataclass(frozen=True)
class Care:
    """What is done around an operation besides running its command: by the runner's executor
    and by deploy.sh alike."""

    repair_first: bool = False
    """It needs a consistent dpkg database: an interrupted one is repaired first."""
    retry_on_lock: bool = False
    """apt's lock timeout does not cover the lists lock (netlab#2473): retry with backoff."""


def care_for(op: Program | Prefetch) -> Care:
    match op:
        case AptUpdate():
            return Care(repair_first=True, retry_on_lock=True)
        case AptInstall() | AptUpgrade():
            return Care(repair_first=True)
        case DpkgConfigure() | AptFixBroken():
            return Care()  # the repairs themselves
        case AptHold() | DnfInstall() | DnfUpgrade() | DnfModuleEnable() | DnfVersionLock():
            return Care()
        case Download() | Service() | Reboot() | Command():
            return Care()
        case PipInstall() | UvPipInstall() | PipDownload() | Venv() | UvVenv() | UvPythonInstall():
            return Care()
        case CondaCreate() | MiniforgeInstall():
            return Care()
        case AptPrefetch() | UvPrefetch():
            return Care()  # cache only: no lock taken, nothing to repair
        case _:  # pragma: no cover - exhaustive
            assert_never(op)
