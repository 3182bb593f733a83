"""The Ansible export's tasks: each plan action as ansible.builtin tasks, with the same pins.

Every action maps to an ``ansible.builtin`` task (exhaustively: ``Run | WriteFile``): apt-get and
dnf to ``apt``/``dnf``, ``dpkg -i`` to ``apt: deb``, ``apt-mark hold`` to ``dpkg_selections``,
systemctl to ``systemd_service``, reboot to ``reboot``, gpuwizard's downloads to ``get_url``
with their pinned SHA-256 (keys through ``get_url`` and gpuwizard's own key check, which checks
the pinned fingerprint and dearmors; never apt-key), pinned pip installs to ``pip`` with the index
URL and the environment, file writes to ``copy`` with ``content`` and ``mode``; a command with no
fitting module stays a ``command`` in argv form. A prompt the runner answers becomes ``expect``;
its secret is asked once by ``vars_prompt`` (hidden, no default) and never written. The download
folder is made root-only (0700). Where the runner relies on facts the playbook cannot see, the
task states the end state instead: create-env ``creates`` the environment, downloads first make
their folder. The playbook is a data structure dumped by a SafeDumper; a value holding Jinja
delimiters is tagged ``!unsafe`` so Ansible never templates it. Pure: nothing is read or run.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from gpuwizard.export.bash_runtime import KEYCHECK
from gpuwizard.export.source import ExportError, ExportSource
from gpuwizard.export.words import check_path, one_line
from gpuwizard.paths import DOWNLOADS_DIR
from gpuwizard.plan import Action, Run, SecretRef, StepPlan, WriteFile, assert_never
from gpuwizard.steps.base import DOWNLOAD_TOOL

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
_JINJA = ("{{", "{%", "{#")
_PYPI = re.compile(r"pypi:([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9._-]*)")
_ARCH = re.compile(r"[A-Za-z0-9_]+")
_SERVICE_STATES = {"start": "started", "restart": "restarted", "stop": "stopped"}


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


def apt_options(rest: list[str], args: dict[str, object]) -> list[str] | None:
    """Consume apt-get's leading options into apt module arguments; None: one it cannot say."""
    dpkg: list[str] = []
    while rest and rest[0].startswith("-"):
        flag = rest.pop(0)
        if flag in ("-q", "-qq", "-y", "--yes", "--quiet"):
            continue
        if flag == "--no-install-recommends":
            args["install_recommends"] = False
            continue
        if flag != "-o" or not rest:
            return None
        key, _, value = rest.pop(0).partition("=")
        if key == "DPkg::Lock::Timeout" and value.isdigit():
            args["lock_timeout"] = int(value)
        elif key == "Dpkg::Options::" and value.startswith("--"):
            dpkg.append(value[2:])
        elif key != "Dpkg::Progress-Fancy":
            return None
    return dpkg


def apt_task(run: Run) -> list[Task] | None:
    """apt-get [-q] [-y] [-o KEY=VALUE]... update | install PKG... | full-upgrade."""
    rest = list(run.argv[1:])
    args: dict[str, object] = {}
    dpkg = apt_options(rest, args)
    if dpkg is None:
        return None
    command, packages = (rest[0], rest[1:]) if rest else ("", [])
    if command == "update" and not packages:
        args["update_cache"] = True
    elif command == "install" and packages and not any(p.startswith("-") for p in packages):
        args |= {"name": texts(packages), "state": "present"}
    elif command in ("full-upgrade", "dist-upgrade") and not packages:
        args["upgrade"] = "dist"
    else:
        return None
    if dpkg:
        args["dpkg_options"] = text(",".join(dpkg))
    return [{"ansible.builtin.apt": args}]


def repo_file_task(url: str, directory: str) -> Task:
    name = PurePosixPath(url.split("?")[0]).name
    dest = f"{directory}/{name}"
    return {"ansible.builtin.get_url": {"url": text(url), "dest": text(dest), "mode": "0644"}}


def dnf_task(run: Run) -> list[Task] | None:
    """dnf [-y] [-q] install PKG... | dnf config-manager --add-repo URL."""
    rest = [a for a in run.argv[1:] if a not in ("-y", "-q", "--assumeyes", "--quiet")]
    if rest[:1] == ["install"] and len(rest) > 1 and not any(p.startswith("-") for p in rest[1:]):
        return [{"ansible.builtin.dnf": {"name": texts(rest[1:]), "state": "present"}}]
    if rest[:2] == ["config-manager", "--add-repo"] and len(rest) == 3:
        return [repo_file_task(rest[2], "/etc/yum.repos.d")]
    return None


def dpkg_task(run: Run) -> list[Task] | None:
    if len(run.argv) == 3 and run.argv[1] == "-i":
        return [{"ansible.builtin.apt": {"deb": text(run.argv[2])}}]
    return None


def apt_mark_task(run: Run) -> list[Task] | None:
    packages = run.argv[2:]
    if run.argv[1:2] != ("hold",) or not packages or any(p.startswith("-") for p in packages):
        return None
    return [
        {"ansible.builtin.dpkg_selections": {"name": text(p), "selection": "hold"}}
        for p in packages
    ]


def systemctl_task(run: Run) -> list[Task] | None:
    argv = run.argv
    if argv[1:] == ("daemon-reload",):
        return [{"ansible.builtin.systemd_service": {"daemon_reload": True}}]
    if len(argv) != 3 or argv[2].startswith("-"):
        return None
    verb, unit = argv[1], text(argv[2])
    if verb in ("enable", "disable"):
        return [{"ansible.builtin.systemd_service": {"name": unit, "enabled": verb == "enable"}}]
    if verb in _SERVICE_STATES:
        return [{"ansible.builtin.systemd_service": {"name": unit, "state": _SERVICE_STATES[verb]}}]
    return None


def reboot_task(run: Run) -> list[Task] | None:
    if run.argv != ("reboot",):
        return None
    return [{"ansible.builtin.reboot": {"reboot_timeout": REBOOT_TIMEOUT_S}}]


def pip_task(run: Run, conda: bool) -> list[Task] | None:
    """ENV/bin/python -m pip install [--index-url URL] NAME==VERSION... (pinned sets only)."""
    python, rest = run.argv[0], list(run.argv[4:])
    if not python.endswith("/bin/python"):
        return None
    extra: list[str] = []
    while rest and rest[0].startswith("-"):
        flag = rest.pop(0)
        if flag in ("--index-url", "--extra-index-url") and rest:
            extra += [flag, rest.pop(0)]
        elif flag not in ("--quiet", "-q", "--force-reinstall"):
            # --upgrade of an unpinned package: the command says it as it is. --force-reinstall
            # of a pinned set is the same end state to ansible's pip module: that version present.
            return None
    if not rest or not all("==" in p and not p.startswith("-") for p in rest):
        return None
    env = python.removesuffix("/bin/python")
    where: dict[str, object] = (
        {"executable": text(f"{env}/bin/pip")} if conda else {"virtualenv": text(env)}
    )
    args: dict[str, object] = {"name": texts(rest), "state": "present", **where}
    if extra:
        args["extra_args"] = text(shlex.join(extra))
    return [{"ansible.builtin.pip": args}]


# -------------------------------------------------------------------- gpuwizard-fetch


def fetch_options(run: Run, step_id: str) -> tuple[str, str, dict[str, str]]:
    """URL, destination and options of a gpuwizard-fetch command."""
    argv = list(run.argv[1:])
    if len(argv) < 2:
        raise ExportError(f"{step_id}: {DOWNLOAD_TOOL} needs a URL and a destination")
    url, dest, rest = argv[0], check_path(argv[1], f"{step_id}: download path"), argv[2:]
    options: dict[str, str] = {}
    while rest:
        flag = rest.pop(0)
        if flag in ("--dearmor", "--unpinned"):
            options[flag] = ""
        elif flag in ("--sha256", "--fingerprint", "--member") and rest:
            options[flag] = rest.pop(0)
        else:
            raise ExportError(f"{step_id}: {DOWNLOAD_TOOL} option {flag!r} has no Ansible form")
    return url, dest, options


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


def fetch_tasks(run: Run, step_id: str, context: Context) -> list[Task]:
    url, dest, options = fetch_options(run, step_id)
    tasks: list[Task] = []
    source: str = text(url)
    if url.startswith("pypi:"):
        tasks, source = pypi_url_tasks(url, context.source.selection.arch, step_id)
    staged = "--member" in options or "--fingerprint" in options
    download = f"{DOWNLOADS_DIR}/{PurePosixPath(dest).name}.download" if staged else dest
    get: dict[str, object] = {"url": source, "dest": text(download), "mode": "0644"}
    if "--sha256" in options:
        get["checksum"] = text(f"sha256:{options['--sha256']}")
    # get_url, the key check and the extraction all need the folder; gpuwizard-fetch makes it.
    tasks += context.directories(download, dest)
    tasks.append({"ansible.builtin.get_url": get})
    if "--member" in options:
        argv = ["python3", "-c", EXTRACT_MEMBER, download, options["--member"], dest]
        tasks.append(command_task(argv, dest))
    if "--fingerprint" in options:
        check = ["python3", "-c", KEYCHECK.read_text(encoding="utf-8"), download]
        check += [options["--fingerprint"], *(["--dearmor"] if "--dearmor" in options else [])]
        tasks.append(command_task(check, dest))
        copy = {"src": text(download), "dest": text(dest), "remote_src": True, "mode": "0644"}
        tasks.append({"ansible.builtin.copy": copy})
    return tasks


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


ModuleMapper = Callable[[Run], "list[Task] | None"]
MAPPERS: Mapping[str, ModuleMapper] = {
    "apt-get": apt_task,
    "dnf": dnf_task,
    "dpkg": dpkg_task,
    "apt-mark": apt_mark_task,
    "systemctl": systemctl_task,
    "reboot": reboot_task,
}


def default_creates(run: Run, step: StepPlan, env_path: str) -> str | None:
    """What makes a command done: the plan's ``creates``, or for create-env the environment.

    The runner plans create-env only where the environment is missing; a playbook reruns on
    every server, so its ``creates`` keeps a rerun from clearing an environment already built.
    """
    if run.creates is not None or step.id != "create-env":
        return run.creates
    argv = run.argv
    if argv[0] == "bash" and "-p" in argv[:-1]:
        return f"{argv[argv.index('-p') + 1]}/bin/conda"
    return f"{env_path}/bin/python" if env_path in argv else None


def expect_task(run: Run, creates: str | None, secrets: Mapping[str, str]) -> Task:
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


def run_tasks(run: Run, step: StepPlan, context: Context) -> list[Task]:
    if not run.argv:
        raise ExportError(f"{step.id}: a command with no program")
    selection = context.source.selection
    creates = default_creates(run, step, check_path(selection.env.path, "environment path"))
    if creates is not None:
        check_path(creates, f"{step.id}: creates path")
    if run.answers:
        return [expect_task(run, creates, context.secrets)]
    if run.argv[0] == DOWNLOAD_TOOL:
        return fetch_tasks(run, step.id, context)
    mapped: list[Task] | None = None
    if run.argv[1:4] == ("-m", "pip", "install"):
        mapped = pip_task(run, selection.env.kind == "conda")
    elif run.argv[0] in MAPPERS and creates is None:
        mapped = MAPPERS[run.argv[0]](run)
    if mapped is not None:
        return mapped
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


def action_tasks(action: Action, step: StepPlan, context: Context) -> list[Task]:  # noqa: RET503 - exhaustive
    match action:
        case Run():
            tasks = run_tasks(action, step, context)
            env = {text(k): text(v) for k, v in action.env.items()}
            return [{**t, "environment": env} if env else t for t in tasks]
        case WriteFile():
            private = action.path.startswith(DOWNLOADS_DIR + "/")
            return [
                *(context.directories(action.path) if private else []),
                write_task(action, step.id),
            ]
        case _:  # pragma: no cover - exhaustive
            assert_never(action)


def describe(action: Action) -> str:
    """The action in a few words for a task name: package tools without their -o/-q/-y noise."""
    if isinstance(action, WriteFile):
        return one_line(action.display())
    if action.argv[:1] == (DOWNLOAD_TOOL,) and len(action.argv) > 2:
        url, dest = action.argv[1:3]
        note = " (UNCONFIRMED: no pinned checksum)" if "--unpinned" in action.argv else ""
        return one_line(f"download {PurePosixPath(url).name} to {dest}{note}")
    words, argv = [], list(action.argv)
    quiet = argv[0] in ("apt-get", "dnf")
    while argv:
        word = argv.pop(0)
        if quiet and word == "-o" and argv:
            argv.pop(0)
        elif not (quiet and word in ("-q", "-y")):
            words.append(f"<script, {word.count(chr(10)) + 1} lines>" if "\n" in word else word)
    shown = one_line(shlex.join(words))
    return shown if len(shown) <= 80 else shown[:77] + "..."


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
