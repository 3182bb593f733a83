"""The Dockerfile export: the plan's image-capable steps as a PyTorch image.

The base image comes from ``gpuwizard.export.docker_base``, shell words from
``gpuwizard.export.words``; the note on what the host needs is ``gpuwizard.export.docker_host``.

Only steps that declare ``Target.IMAGE`` are built into the image, with their own commands
(apt-get gains ``--no-install-recommends``, pip ``--no-cache-dir``, and each layer drops the
package lists); host-only steps (driver, nouveau, reboots) are listed in the header. Every
interpolated value is shell-quoted; a path with a line break or NUL raises ``ExportError``. Pure:
reads only the shipped compat table, never the machine, and runs nothing.
"""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from gpuwizard.core.download_pins import image_digest, load_pins
from gpuwizard.core.facts import Installs, PythonEnv
from gpuwizard.core.isolation import ISOLATED
from gpuwizard.core.ops import (
    DOWNLOAD_TOOL,
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
    DpkgConfigure,
    MiniforgeInstall,
    PipDownload,
    PipInstall,
    Program,
    Reboot,
    Service,
    UvPipInstall,
    UvPythonInstall,
    UvVenv,
    Venv,
)
from gpuwizard.core.paths import DOWNLOADS_DIR
from gpuwizard.core.plan import Action, StepPlan, Target, WriteFile, assert_never, uses_downloads
from gpuwizard.export.docker_base import BaseImage, ImageOs, base_image, packaged_pythons
from gpuwizard.export.source import VERIFY_STEP, ExportError, ExportSource
from gpuwizard.export.words import ENV_NAME, check_path, one_line, shell_word
from gpuwizard.recommend.table import CompatTable, load_table
from gpuwizard.steps import build_steps
from gpuwizard.steps.base import install_packages
from gpuwizard.steps.install_python import UV, UV_VERSION, os_packages, uv_runs

UV_IMAGE = f"ghcr.io/astral-sh/uv:{UV_VERSION}"
"""The same uv release the host's steps fetch; its digest, when pinned, in download_pins.yaml."""
UV_IN_IMAGE = UV
"""Where the host's steps have it, so that their uv commands run in the image as they are; the
host fetches it from PyPI by SHA-256, the image copies it from uv's image (a download tool in
the image would be one more thing to trust)."""
USER_NAME = "pytorch"
USER_ID = 10001
"""Above the range distributions give to people, so it never matches a host account by chance."""
WORKDIR = "/workspace"

VERIFY_CMD = """\
import torch
count = torch.cuda.device_count()
print(f"torch {torch.__version__} (CUDA {torch.version.cuda}): {count} GPU(s) visible")
assert torch.cuda.is_available() and count > 0, "no GPU visible: run with --gpus all"
arches = [a[3:] for a in torch.cuda.get_arch_list() if a.startswith("sm_") and a[3:].isdigit()]
for i in range(count):
    major, minor = torch.cuda.get_device_capability(i)
    ok = any(a[:-1] == str(major) and int(a[-1]) <= minor for a in arches)
    assert ok, f"GPU {i} is sm_{major}{minor}; this build has kernels for sm_{', sm_'.join(arches)}"
    x = torch.ones(256, 256, device=f"cuda:{i}")
    assert float((x @ x).sum()) == 256.0**3, f"matmul gave a wrong result on GPU {i}"
    print(f"GPU {i}: {torch.cuda.get_device_name(i)} (sm_{major}{minor}) ok")
"""
"""The image form of verify-torch: what the container checks when it starts with the GPUs."""

_HOST_NEEDS = "docker-host.md"
IMAGE_FORMS = frozenset({"install-python", "create-env"})
"""Host-only steps the image does in its own way (the environment layer)."""


def _env_value(value: str) -> str:
    """A Dockerfile ENV value: double quotes, with ``\\``, ``"`` and ``$`` escaped."""
    return '"' + re.sub(r'([\\"$])', r"\\\1", value) + '"'


# ---------------------------------------------------------------------- image commands


def image_command(op: Program, step_id: str) -> Command:  # noqa: RET503 - exhaustive
    """The command as an image build runs it: no recommended extras, no caches kept in layers.

    dnf keeps its weak dependencies: RHEL's python3.X may find ensurepip's wheels only that way.
    """
    match op:
        case AptInstall() | PipInstall() | UvPipInstall():
            return op.image_command()
        case Download():
            raise ExportError(
                f"{step_id}: {DOWNLOAD_TOOL} is gpuwizard's own tool, not in the image"
            )
        case AptUpdate() | AptUpgrade() | AptHold() | DpkgConfigure() | AptFixBroken():
            return op.command()
        case DnfInstall() | DnfUpgrade() | DnfModuleEnable() | DnfVersionLock():
            return op.command()
        case Service() | Reboot() | Command():
            return op.command()
        case PipDownload() | Venv() | UvVenv() | UvPythonInstall() | CondaCreate():
            return op.command()
        case MiniforgeInstall():
            return op.command()
        case _:  # pragma: no cover - exhaustive
            assert_never(op)


def run_command(run: Command, step_id: str) -> str:
    """One command as a bash command line; its env as assignments, ``creates`` as a test."""
    if run.answers:
        raise ExportError(
            f"{step_id}: the command answers prompts ({run.display()}); a docker build cannot"
        )
    if not run.argv:
        raise ExportError(f"{step_id}: a command with no program")
    for name in run.env:
        if not ENV_NAME.fullmatch(name):
            raise ExportError(f"{step_id}: {name!r} is not an environment variable name")
    words = [f"{k}={shell_word(v)}" for k, v in run.env.items()]
    if not run.argv[0].isprintable():
        words.append("command")  # ShellCheck's SC2289 reads a tab in a program's name as a typo
    command = " ".join(words + [shell_word(a) for a in run.argv])
    extra = sorted({c for c in run.ok_codes if c != 0})
    if extra:
        codes = "|".join(str(c) for c in extra)
        command = f"{{ {command} || case $? in {codes}) true ;; *) false ;; esac; }}"
    if run.creates is not None:
        creates = shell_word(check_path(run.creates, f"{step_id}: creates path"))
        command = f"if [ ! -e {creates} ]; then {command}; fi"
    return command


def write_commands(write: WriteFile, step_id: str) -> list[str]:
    path = check_path(write.path, f"{step_id}: file path")
    if not path.startswith("/"):
        raise ExportError(f"{step_id}: file path {path!r} is not absolute")
    parent = str(PurePosixPath(path).parent)
    quoted = shell_word(path)
    return [
        f"mkdir -p {shell_word(parent)}",
        f"printf '%s' {shell_word(write.content)} > {quoted}",
        f"chmod {write.mode:04o} {quoted}",
    ]


def action_commands(action: Action, step_id: str) -> list[str]:
    match action:
        case WriteFile():
            return write_commands(action, step_id)
        case _:
            return [run_command(image_command(action, step_id), step_id)]


@dataclass(frozen=True)
class Layer:
    """One RUN instruction: a plan step (or the environment) as chained commands."""

    comment: str
    commands: tuple[str, ...]
    ignores: tuple[tuple[str, str], ...] = ()
    """(hadolint rule, why) pairs the RUN is exempt from."""


_APT_WHY = (
    "DL3008",
    "distribution packages are not version-pinned: they follow the pinned base image, and a "
    "pinned version leaves the archive at its next update, which would break the build.",
)
_DNF_WHY = ("DL3041", _APT_WHY[1])
_SINGLE_WHY = ("DL3059", "one RUN per plan step, so that each step is its own layer and comment.")


def layer(comment: str, actions: Iterable[Action], step_id: str) -> Layer:
    # The host's fetch of uv: the image has it from uv's image (COPY --from=uv).
    actions = tuple(a for a in actions if not (isinstance(a, Download) and a.dest == UV))
    commands = [c for a in actions for c in action_commands(a, step_id)]
    apt = any(isinstance(a, AptInstall) for a in actions)
    dnf = any(isinstance(a, DnfInstall) for a in actions)
    commands += ["rm -rf /var/lib/apt/lists/*"] if apt else []
    commands += ["dnf clean all"] if dnf else []
    # Checked downloads (the torch wheels) are installed, then dropped: not kept in the layer.
    commands += [f"rm -rf {DOWNLOADS_DIR}"] if any(uses_downloads(a) for a in actions) else []
    ignores = ([_APT_WHY] if apt else []) + ([_DNF_WHY] if dnf else [])
    return Layer(comment, tuple(commands), tuple(ignores))


def environment_layer(source: ExportSource, os: ImageOs, table: CompatTable) -> tuple[Layer, bool]:
    """The environment's Python and a venv (create-env's image form); True: uv installs Python.

    uv makes the venv as on the host (pip where gpuwizard pins no uv for the CPU)."""
    env = source.selection.env
    path = check_path(env.path, "environment path")
    packaged = env.python in packaged_pythons(table, os)
    if packaged:
        python = f"/usr/bin/python{env.python}"
        venv: Action = (
            UvVenv(UV_IN_IMAGE, python, path)
            if uv_runs(source.selection.arch)
            else Venv(python, path)
        )
        actions: list[Action] = [
            *install_packages(os.family, os_packages(os.family, env.python)),
            venv,
        ]
        where = f"{os.name} packages Python {env.python}"
    else:
        actions = [UvPythonInstall(UV_IN_IMAGE, env.python), UvVenv(UV_IN_IMAGE, env.python, path)]
        where = f"{os.name} has no Python {env.python} package, so uv installs a standalone CPython"
    kind = (
        " (a conda environment on the host; pip installs torch either way)"
        if env.kind == "conda"
        else ""
    )
    comment = f"Python {env.python} and a venv at {path}{kind}: {where}"
    return layer(comment, actions, "create-env"), not packaged


def fresh_actions(source: ExportSource) -> dict[str, tuple[Action, ...]]:
    """Each image step planned for an empty image: for steps already done on the source host."""
    facts = dataclasses.replace(source.facts, installs=Installs(), python=PythonEnv())
    steps = build_steps(source.selection, facts)
    return {s.id: s.plan(facts) for s in steps if Target.IMAGE in s.targets}


_IN_BASE = (
    "Not built: the nvidia/cuda base image ships NVIDIA's repository and its signed-by keyring."
)
_AT_START = "At container start (CMD below): a docker build sees no GPU."


def step_layers(source: ExportSource) -> list[Layer | str]:
    """The image steps in plan order: a Layer to build, or a comment saying why it is not built."""
    out: list[Layer | str] = []
    fresh: dict[str, tuple[Action, ...]] | None = None
    for step in source.plan.steps:
        if Target.IMAGE not in step.targets:
            continue
        head = f"{step.id}: {step.title}"
        if step.id == "add-cuda-repo":
            out.append(f"{head}. {_IN_BASE}")
            continue
        if step.id == VERIFY_STEP:
            out.append(f"{head}. {_AT_START}")
            continue
        actions = step.actions
        if not actions:
            fresh = fresh if fresh is not None else fresh_actions(source)
            actions = fresh.get(step.id, ())
        if actions:
            out.append(layer(head, actions, step.id))
        else:
            out.append(f"{head}. Nothing to do.")
    return out


# ----------------------------------------------------------------------------- render


def _comment(text: str, indent: str = "") -> list[str]:
    wrapped = textwrap.wrap(one_line(text), 96 - len(indent), break_on_hyphens=False) or [""]
    return [f"# {indent}{line}".rstrip() for line in wrapped]


def host_steps(plan_steps: Sequence[StepPlan]) -> list[str]:
    """The host-only steps that have work to do, each as "id: title (reboot note)"."""
    lines = []
    for step in plan_steps:
        if Target.IMAGE in step.targets or step.id in IMAGE_FORMS or not step.actions:
            continue
        later = step.needs_reboot and not step.reboot
        note = " (takes effect after a reboot)" if later else ""
        lines.append(f"{step.id}: {step.title}{note}")
    return lines


def _host_needs(steps: Sequence[str]) -> list[str]:
    toolkit = f"Docker with the NVIDIA Container Toolkit: see {_HOST_NEEDS}."
    if not steps:
        return _comment(f"What the host needs: its driver is already in place; {toolkit}")
    return [
        "# What the host needs (host-only steps of the plan; no image can carry them):",
        *(line for s in steps for line in _comment(s, "  ")),
        f"#   and {toolkit}",
    ]


def header(source: ExportSource, base: BaseImage, uv: bool) -> list[str]:
    t, env = source.selection.torch, source.selection.env
    lines = [
        f"# gpuwizard {one_line(source.version)}: PyTorch {one_line(t.version)} ({one_line(t.variant)}) "
        f"with Python {one_line(env.python)}",
        *_comment(f"Exported from the plan made on: {source.machine}"),
        "# Plan summary:",
        *(line for s in source.plan.summary for line in _comment(s, "  ")),
        "#",
        *_host_needs(host_steps(source.plan.steps)),
        "#",
        *_comment(f"Base image {base.image}: {base.why}"),
    ]
    if not base.confirmed:
        lines += _comment(
            f"UNCONFIRMED: the tag {base.image} was not seen published; check it with "
            f"`docker manifest inspect {base.image}` before relying on it."
        )
    return lines + digest_notes([base.image, *([UV_IMAGE] if uv else [])])


def pinned(image: str) -> str:
    """``image@sha256:...`` where gpuwizard pins its digest, else the tag alone."""
    digest = image_digest(image)
    return f"{image}@{digest}" if digest else image


def digest_notes(images: Sequence[str]) -> list[str]:
    """A loud line per base image whose digest gpuwizard could not pin."""
    missing = [i for i in images if image_digest(i) is None]
    if not missing:
        return []
    reason = load_pins().images_unconfirmed
    return _comment(
        f"UNCONFIRMED digest: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} pinned by "
        f"tag only ({reason}); a tag can be moved. Pin the digest with `docker buildx imagetools "
        "inspect IMAGE` and FROM IMAGE@sha256:DIGEST."
    )


def render_layer(item: Layer, previous_single: bool) -> list[str]:
    ignores = list(item.ignores)
    if len(item.commands) == 1 and previous_single:
        ignores.append(_SINGLE_WHY)
    lines = ["", *_comment(item.comment)]
    lines += [line for rule, why in ignores for line in _comment(f"{rule} waived: {why}")]
    if ignores:
        lines.append(f"# hadolint ignore={','.join(rule for rule, _ in ignores)}")
    first, *rest = item.commands
    body = [f"RUN {first}", *(f"    && {c}" for c in rest)]
    return lines + [line + " \\" for line in body[:-1]] + body[-1:]


def env_lines(env_path: str) -> list[str]:
    """ENV for the environment, so ``python`` is its python; none for a path with a backslash.

    Docker reads ``"\\"`` in ENV as one backslash, but hadolint 2.15 cannot parse an escaped
    backslash before a quote; such a path is left to the absolute paths CMD already uses.
    """
    if "\\" in env_path:
        return ["# The environment's path has a backslash: call its bin/python by the full path."]
    # One ENV each: hadolint's DL3044 reads an escaped \$PATH in a path as a reference to PATH.
    return [
        f"ENV VIRTUAL_ENV={_env_value(env_path)}",
        f'ENV PATH={_env_value(env_path + "/bin")[:-1]}:$PATH"',
        "ENV PYTHONUNBUFFERED=1",
    ]


PYTHON_LINK = "/usr/local/bin/gpuwizard-python"
"""CMD's python when the environment's path needs escapes in JSON (hadolint then misreads CMD)."""


def cmd_python(env_path: str) -> str:
    python = f"{env_path}/bin/python"
    return PYTHON_LINK if "\\" in json.dumps(python, ensure_ascii=False) else python


def user_lines(env_path: str) -> list[str]:
    python = f"{env_path}/bin/python"
    link = cmd_python(env_path) != python
    return [
        "",
        f"# A non-root user for the workload; {WORKDIR} is its working directory.",
        *(
            [
                "# The environment's path needs escapes in CMD's JSON: CMD calls a link to its python."
            ]
            if link
            else []
        ),
        f"RUN groupadd --gid {USER_ID} {USER_NAME} \\",
        f"    && useradd --uid {USER_ID} --gid {USER_ID} --create-home --no-log-init "
        f"--shell /bin/bash {USER_NAME} \\",
        *([f"    && ln -s {shell_word(python)} {PYTHON_LINK} \\"] if link else []),
        f"    && install -d -o {USER_ID} -g {USER_ID} {WORKDIR}",
        f"USER {USER_ID}:{USER_ID}",
        f"WORKDIR {WORKDIR}",
        *env_lines(env_path),
        "",
        "# verify-torch in image form: the torch build, its CUDA and every GPU, with a matmul on each;",
        "# it exits non-zero when no GPU is visible. Replace it with your own command as usual.",
        "CMD " + json.dumps([cmd_python(env_path), ISOLATED, "-c", VERIFY_CMD], ensure_ascii=False),
    ]


def render_dockerfile(source: ExportSource) -> str:
    """The Dockerfile for the plan's image steps.

    Raises:
        ExportError: a path with a line break or NUL, a step an image build cannot run, or a
            setup that uses the PyTorch already on its machine (an image has none).
    """
    existing = source.selection.env
    if existing.existing is not None:
        raise ExportError(
            f"the setup uses the PyTorch already in {existing.path}, which an image built from "
            "nvidia/cuda does not have: for a Dockerfile, export a setup that installs PyTorch "
            "(without --use-env)"
        )
    table = load_table()
    base = base_image(source, table)
    env_path = check_path(source.selection.env.path, "environment path")
    env, standalone = environment_layer(source, base.os, table)
    # uv makes the environment and installs PyTorch wherever the host's steps use it.
    uv = standalone or uv_runs(source.selection.arch)
    lines = header(source, base, uv)
    if uv:
        lines += ["", f"FROM {pinned(UV_IMAGE)} AS uv"]
    lines += ["", f"FROM {pinned(base.image)}", 'SHELL ["/bin/bash", "-o", "pipefail", "-c"]']
    if uv:
        lines += ["", f"COPY --from=uv /uv {UV_IN_IMAGE}"]
    previous_single = False
    for item in [env, *step_layers(source)]:
        if isinstance(item, str):
            lines += ["", *_comment(item)]
            continue
        lines += render_layer(item, previous_single)
        previous_single = len(item.commands) == 1
    return "\n".join(lines + user_lines(env_path)) + "\n"
