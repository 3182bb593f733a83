"""The Ansible export's tasks: each plan operation as ansible.builtin tasks, with the same pins.

Every operation maps to ``ansible.builtin`` tasks by its type (a ``match`` that mypy proves
exhaustive): apt and dnf installs to ``apt``/``dnf`` (with the runner's lock timeout and dpkg
options), holds to ``dpkg_selections``, services to ``systemd_service``, the reboot to
``reboot``, downloads to gpuwizard's https-only downloader (``runner/httpsget.py``, run with
``python3 -I``: ``get_url`` follows a redirect to plain http) with their pinned SHA-256 (keys
through gpuwizard's own key check, which checks the pinned fingerprint and keeps the one key
alone; never apt-key),
pinned pip installs to ``pip`` with the index URL and the environment, file writes to ``copy``
with ``content`` and ``mode``; an operation with no fitting module runs as a ``command`` in argv
form. A prompt the runner answers becomes ``expect``; its secret is asked once by
``vars_prompt`` (hidden, no default) and never written. The download folder is made root-only
(0700). Where the runner relies on facts the playbook cannot see, the task states the end state
instead: create-env ``creates`` the environment, downloads first make their folder. The
playbook is a data structure dumped by a SafeDumper; a value holding Jinja delimiters is tagged
``!unsafe`` so Ansible never templates it. Pure: nothing is read or run.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from gpuwizard.core.isolation import ISOLATED
from gpuwizard.core.ops import (
    APT_LOCK_TIMEOUT_S,
    AptFixBroken,
    AptHold,
    AptInstall,
    AptUpdate,
    AptUpgrade,
    Command,
    CondaCreate,
    DnfInstall,
    DnfModuleEnable,
    DnfUpgrade,
    DnfVersionLock,
    Download,
    DownloadCheck,
    DpkgConfigure,
    Fingerprint,
    MiniforgeInstall,
    NoPin,
    PipDownload,
    PipInstall,
    Program,
    Reboot,
    Service,
    Sha256,
    UvPipInstall,
    UvPythonInstall,
    UvVenv,
    Venv,
)
from gpuwizard.core.paths import DOWNLOADS_DIR
from gpuwizard.core.plan import Action, SecretRef, StepPlan, WriteFile, assert_never
from gpuwizard.export.bash_runtime import KEYCHECK
from gpuwizard.export.source import ExportError, ExportSource
from gpuwizard.export.words import check_path, one_line
from gpuwizard.runner.keycheck import UNPINNED

Task = dict[str, object]
REBOOT_TIMEOUT_S = 1800
"""Servers with many GPUs can take minutes in firmware before the OS boots."""
EXTRACT_MEMBER = (
    "import os, sys, zipfile\n"
    "wheel, member, dest = sys.argv[1:]\n"
    "data = zipfile.ZipFile(wheel).read(member)\n"
    "with open(dest + '.part', 'wb') as part:\n"
    "    part.write(data)\n"
    "os.chmod(dest + '.part', 0o755)\n"
    "os.replace(dest + '.part', dest)\n"
)
"""gpuwizard-fetch --member in Ansible: one file out of a checked wheel, with python3."""
HTTPSGET = Path(__file__).parents[1] / "runner" / "httpsget.py"
"""gpuwizard's https-only downloader, carried by the playbook as text (as the key check is)."""
_JINJA = ("{{", "{%", "{#")
_PYPI = re.compile(r"pypi:([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9._-]*)")
_ARCH = re.compile(r"[A-Za-z0-9_]+")
_SERVICE_STATES = {"start": "started", "restart": "restarted"}


class Unsafe(str):
    """A value Ansible must take literally: dumped with the ``!unsafe`` tag."""


def text(value: str) -> str:
    """The value as the playbook carries it: tagged ``!unsafe`` when Ansible would template it."""
    if "\0" in value:
        raise ExportError(f"{value[:40]!r} contains NUL, which no command or file name can carry")
    return Unsafe(value) if any(m in value for m in _JINJA) else value


def texts(values: Sequence[str]) -> list[str]:
    return [text(v) for v in values]


# ---------------------------------------------------------------------- the modules
_DPKG_OPTIONS = "force-confdef,force-confold"
"""The dpkg options every apt operation passes (keep a locally changed config file)."""


def apt_tasks(op: AptUpdate | AptInstall | AptUpgrade) -> list[Task]:
    """The apt module, with the same lock timeout and dpkg options as the runner's apt-get."""
    match op:
        case AptUpdate():
            return [{"ansible.builtin.apt": {"update_cache": True}}]
        case AptInstall():
            recommends = {} if op.recommends else {"install_recommends": False}
            args = {"name": texts(op.packages), "state": "present"}
        case AptUpgrade():
            recommends, args = {}, {"upgrade": "dist"}
        case _:  # pragma: no cover - exhaustive
            assert_never(op)
    lock = {"lock_timeout": APT_LOCK_TIMEOUT_S}
    return [{"ansible.builtin.apt": {**lock, **recommends, **args, "dpkg_options": _DPKG_OPTIONS}}]


def hold_tasks(op: AptHold) -> list[Task]:
    return [
        {"ansible.builtin.dpkg_selections": {"name": text(p), "selection": "hold"}}
        for p in op.packages
    ]


def service_tasks(op: Service) -> list[Task]:
    unit = text(op.unit)
    if op.verb == "enable":
        return [{"ansible.builtin.systemd_service": {"name": unit, "enabled": True}}]
    return [{"ansible.builtin.systemd_service": {"name": unit, "state": _SERVICE_STATES[op.verb]}}]


def pip_tasks(op: PipInstall, conda: bool) -> list[Task] | None:
    """The pip module for a pinned set (NAME==VERSION...); None: wheel files, said as a command.

    --force-reinstall of a pinned set is the same end state to ansible's pip module: that version
    present.
    """
    if not op.requirements or not all("==" in p and not p.startswith("-") for p in op.requirements):
        return None
    where: dict[str, object] = (
        {"executable": text(f"{op.env}/bin/pip")} if conda else {"virtualenv": text(op.env)}
    )
    args: dict[str, object] = {"name": texts(op.requirements), "state": "present", **where}
    if op.index_url is not None:
        args["extra_args"] = text(shlex.join(["--index-url", op.index_url]))
    return [{"ansible.builtin.pip": args}]


def uv_pip_tasks(op: UvPipInstall) -> list[Task]:
    """``uv pip install`` as a command (Ansible has no uv module), changed only when uv installed
    something ("Installed N packages"), not when it found the set in place ("Audited N
    packages"): a rerun on a done server reports no change."""
    run = op.command()
    task = command_task(run.argv, None)
    task["register"] = "gpuwizard_uv"
    task["changed_when"] = "'Installed' in gpuwizard_uv.stderr"
    task["timeout"] = int(run.timeout_s)
    return [task]


# -------------------------------------------------------------------- gpuwizard-fetch


def pypi_url_tasks(spec: str, arch: str, step_id: str) -> tuple[list[Task], str]:
    """The tasks that find a wheel on PyPI (as gpuwizard-fetch does), and its URL expression."""
    match = _PYPI.fullmatch(spec)
    if not match or not _ARCH.fullmatch(arch):
        raise ExportError(f"{step_id}: {spec!r} is not a pypi:NAME==VERSION pin for this playbook")
    name, version = match.groups()
    pattern = re.sub(r"\.", "[.]", f"^{name}-{version}-") + f".*manylinux_2_17_{arch}[.]"
    lookup: Task = {
        "ansible.builtin.uri": {
            "url": f"https://pypi.org/simple/{name}/",
            "headers": {"Accept": "application/vnd.pypi.simple.v1+json"},
            "return_content": True,
        },
        "register": "gpuwizard_pypi",
    }
    url = (
        "{{ gpuwizard_pypi.json.files | selectattr('filename', 'search', "
        f"'{pattern}') | map(attribute='url') | first }}}}"
    )
    return [lookup], url


def fetch_tasks(fetch: Download, step_id: str, context: Context) -> list[Task]:
    url, dest = fetch.url, check_path(fetch.dest, f"{step_id}: download path")
    tasks: list[Task] = []
    source: str = text(url)
    if url.startswith("pypi:"):
        tasks, source = pypi_url_tasks(url, context.source.selection.arch, step_id)
    staged = fetch.member is not None or fetch.is_key
    download = f"{DOWNLOADS_DIR}/{PurePosixPath(dest).name}.download" if staged else dest
    # The download, the key check and the extraction all need the folder; gpuwizard-fetch makes it.
    tasks += context.directories(download, dest)
    tasks.append(download_task(source, download, fetch.check, dest))
    if fetch.member is not None:
        argv = ["python3", ISOLATED, "-c", EXTRACT_MEMBER, download, fetch.member, dest]
        tasks.append(command_task(argv, dest))
    if fetch.is_key:  # the checked key alone is installed, never the file as it came
        fingerprint = fetch.check.value if isinstance(fetch.check, Fingerprint) else UNPINNED
        check = ["python3", ISOLATED, "-c", KEYCHECK.read_text(encoding="utf-8"), download]
        check += [fingerprint, *(["--dearmor"] if fetch.dearmor else [])]
        tasks.append(command_task(check, dest))
        copy = {"src": text(download), "dest": text(dest), "remote_src": True, "mode": "0644"}
        tasks.append({"ansible.builtin.copy": copy})
    return tasks


def download_task(source: str, download: str, check: DownloadCheck, dest: str) -> Task:
    """gpuwizard's https-only downloader (``runner/httpsget.py``, carried as text) instead of
    get_url, which follows a redirect from https to plain http; the SHA-256 is checked there."""
    argv: list[str] = ["python3", ISOLATED, "-c", text(HTTPSGET.read_text(encoding="utf-8"))]
    argv += [source, text(download)]  # source may be the PyPI lookup's expression: templated
    argv += [text(check.value)] if isinstance(check, Sha256) else []
    return {"ansible.builtin.command": {"argv": argv, "creates": text(dest)}}


# ------------------------------------------------------------------------- dispatch


@dataclass
class Context:
    """What task building needs beyond the action: the source, secret names, folders made."""

    source: ExportSource
    secrets: Mapping[str, str]
    made: set[str] = field(default_factory=set)

    def directories(self, *files: str) -> list[Task]:
        """A task per parent folder of these files not yet made by this playbook."""
        tasks: list[Task] = []
        for file in files:
            folder = str(PurePosixPath(file).parent)
            if folder not in self.made:
                self.made.add(folder)
                # What is downloaded is run or installed from there: only root may enter.
                mode = "0700" if folder == DOWNLOADS_DIR else "0755"
                tasks.append(
                    {
                        "ansible.builtin.file": {
                            "path": text(folder),
                            "state": "directory",
                            "mode": mode,
                        }
                    }
                )
        return tasks


def command_task(argv: Sequence[str], creates: str | None) -> Task:
    args: dict[str, object] = {"argv": texts(argv)}
    task: Task = {"ansible.builtin.command": args}
    if creates is not None:
        args["creates"] = text(creates)
    else:
        task["changed_when"] = True  # the plan runs it because something is missing
    return task


def default_creates(op: Program, step: StepPlan, env_path: str) -> str | None:
    """What makes a command done: the plan's ``creates``, or for create-env the environment.

    The runner plans create-env only where the environment is missing; a playbook reruns on
    every server, so its ``creates`` keeps a rerun from clearing an environment already built.
    """
    own = op.command().creates
    if own is not None or step.id != "create-env":
        return own
    match op:
        case MiniforgeInstall():
            return f"{op.prefix}/bin/conda"
        case Venv() | UvVenv() | CondaCreate() if op.path == env_path:
            return f"{env_path}/bin/python"
    return None


def expect_task(run: Command, creates: str | None, secrets: Mapping[str, str]) -> Task:
    responses: dict[str, str] = {}
    for prompt, reply in run.answers.items():
        if isinstance(reply, SecretRef):
            responses[text(prompt)] = f"{{{{ {secrets[reply.name]} }}}}"
        else:
            responses[text(prompt)] = text(reply)
    args: dict[str, object] = {
        "command": text(shlex.join(run.argv)),
        "responses": responses,
        "timeout": int(run.silence_timeout_s),
    }
    if creates is not None:
        args["creates"] = text(creates)
    task: Task = {"ansible.builtin.expect": args, "no_log": True}
    if creates is None:
        task["changed_when"] = True
    return task


def program_tasks(op: Program, step: StepPlan, context: Context) -> list[Task]:
    """An ansible.builtin module where one says the same end state; else the command itself."""
    selection = context.source.selection
    creates = default_creates(op, step, check_path(selection.env.path, "environment path"))
    if creates is not None:
        check_path(creates, f"{step.id}: creates path")
    mapped = module_tasks(op, step.id, context) if creates is None else None
    return mapped if mapped is not None else command_tasks(op, step.id, creates, context)


def module_tasks(op: Program, step_id: str, context: Context) -> list[Task] | None:  # noqa: RET503 - exhaustive
    """The module tasks for an operation; None: it has no module, so it runs as a command."""
    match op:
        case AptUpdate() | AptInstall() | AptUpgrade():
            return apt_tasks(op)
        case AptHold():
            return hold_tasks(op)
        case DnfInstall():
            return [{"ansible.builtin.dnf": {"name": texts(op.packages), "state": "present"}}]
        case Download():
            return fetch_tasks(op, step_id, context)
        case Service():
            return service_tasks(op)
        case Reboot():
            return [{"ansible.builtin.reboot": {"reboot_timeout": REBOOT_TIMEOUT_S}}]
        case PipInstall():
            return pip_tasks(op, context.source.selection.env.kind == "conda")
        case UvPipInstall():
            return uv_pip_tasks(op)
        case (
            DpkgConfigure() | AptFixBroken() | DnfUpgrade() | DnfModuleEnable() | DnfVersionLock()
            | PipDownload() | Venv() | UvVenv() | UvPythonInstall() | CondaCreate()
            | MiniforgeInstall() | Command()
        ):  # fmt: skip
            return None
        case _:  # pragma: no cover - exhaustive
            assert_never(op)


def command_tasks(op: Program, step_id: str, creates: str | None, context: Context) -> list[Task]:
    run = op.command()
    if not run.argv:
        raise ExportError(f"{step_id}: a command with no program")
    if run.answers:
        return [expect_task(run, creates, context.secrets)]
    task = command_task(run.argv, creates)
    task["timeout"] = int(run.timeout_s)
    extra = sorted({c for c in run.ok_codes if c != 0})
    if extra:
        task["register"] = "gpuwizard_command"
        task["failed_when"] = f"gpuwizard_command.rc not in {[0, *extra]}"
    return [task]


def write_task(write: WriteFile, step_id: str) -> Task:
    args: dict[str, object] = {
        "dest": text(check_path(write.path, f"{step_id}: file path")),
        "content": text(write.content),
        "mode": f"{write.mode:04o}",
    }
    if write.backup:
        args["backup"] = True
    return {"ansible.builtin.copy": args}


def action_tasks(action: Action, step: StepPlan, context: Context) -> list[Task]:
    match action:
        case WriteFile():
            private = action.path.startswith(DOWNLOADS_DIR + "/")
            return [
                *(context.directories(action.path) if private else []),
                write_task(action, step.id),
            ]
        case _:
            tasks = program_tasks(action, step, context)
            env = {text(k): text(v) for k, v in action.command().env.items()}
            return [{**t, "environment": env} if env else t for t in tasks]


def describe(action: Action) -> str:
    """The action in a few words for a task name: package tools without their -o/-q/-y noise."""
    match action:
        case WriteFile():
            return one_line(action.display())
        case Download():
            note = " (UNCONFIRMED: no pinned checksum)" if isinstance(action.check, NoPin) else ""
            return one_line(f"download {PurePosixPath(action.url).name} to {action.dest}{note}")
        case AptUpdate() | AptInstall() | AptUpgrade() | AptFixBroken():
            words = _apt_words(action)
        case DnfInstall() | DnfUpgrade() | DnfModuleEnable() | DnfVersionLock():
            words = _dnf_words(action)
        case _:
            words = action.command().argv
    shown = [f"<script, {w.count(chr(10)) + 1} lines>" if "\n" in w else w for w in words]
    line = one_line(shlex.join(shown))
    return line if len(line) <= 80 else line[:77] + "..."


def _apt_words(op: AptUpdate | AptInstall | AptUpgrade | AptFixBroken) -> tuple[str, ...]:  # noqa: RET503 - exhaustive
    """apt-get and what it does, without the options every call carries."""
    match op:
        case AptUpdate():
            return ("apt-get", "update")
        case AptInstall():
            no_recommends = () if op.recommends else ("--no-install-recommends",)
            return ("apt-get", *no_recommends, "install", *op.packages)
        case AptUpgrade():
            return ("apt-get", "full-upgrade")
        case AptFixBroken():
            return ("apt-get", "--no-remove", "-f", "install")
        case _:  # pragma: no cover - exhaustive
            assert_never(op)


def _dnf_words(op: DnfInstall | DnfUpgrade | DnfModuleEnable | DnfVersionLock) -> tuple[str, ...]:  # noqa: RET503 - exhaustive
    match op:
        case DnfInstall():
            return ("dnf", "install", *op.packages)
        case DnfUpgrade():
            return ("dnf", "upgrade")
        case DnfModuleEnable():
            return ("dnf", "module", "enable", op.stream)
        case DnfVersionLock():
            return ("dnf", "versionlock", "add", op.spec)
        case _:  # pragma: no cover - exhaustive
            assert_never(op)


def step_tasks(step: StepPlan, context: Context) -> list[Task]:
    title = one_line(step.title)
    title = title[:1].upper() + title[1:]
    out: list[Task] = []
    for action in step.actions:
        tasks = action_tasks(action, step, context)
        for i, task in enumerate(tasks, 1):
            part = f" ({i}/{len(tasks)})" if len(tasks) > 1 else ""
            out.append({"name": text(f"{title}: {describe(action)}{part}"), **task})
    return out
