"""deploy.sh: the resolved plan as a bash script that does what the wizard's runner does.

``render_bash(source)`` renders the very plan the runner executes: the same commands in the same
order, each with exactly its own environment; one guarded block per step, whose marker file
(written only after all of its actions succeeded) makes a rerun skip it; reboot steps that stop
with exit status 10 and count as done once the boot_id has changed; files written atomically from
quoted here-documents; gpuwizard-fetch redone with curl, sha256sum and the runner's key check,
against the same pins; secrets read at run time, taken out of the environment before anything
runs, and never written. Every plan value reaches the script through ``shlex.quote`` or a quoted
here-document, and what bash cannot carry (NUL, a newline in a path) raises ExportError. The
script a person runs carries no test hooks; ``test_build=True`` makes the one gpuwizard's own
tests run (``wizard/export/bash_runtime.py``). Pure: no I/O but reading the key check it
carries, and never the runner, the host or a subprocess.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

from gpuwizard.core.ops import (
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
    care_for,
)
from gpuwizard.core.plan import (
    Action,
    Plan,
    SecretRef,
    StepPlan,
    Target,
    WriteFile,
    assert_never,
    secrets_in,
)
from gpuwizard.export.bash_runtime import MARKER_DIR, UNIT, keycheck_lines, runtime
from gpuwizard.export.bash_words import (
    INDENT,
    ROOT,
    argv_words,
    comment_lines,
    env_words,
    quote,
    rooted,
    wrap,
)
from gpuwizard.export.hostcheck import identity
from gpuwizard.export.source import ExportError, ExportSource
from gpuwizard.export.words import one_line

HEREDOC = "GPUWIZARD_EOF"
_STEP_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def render_bash(source: ExportSource, *, test_build: bool = False) -> str:
    """The plan as deploy.sh, ready to write out (mode 0755: it holds no secret) and run as root.

    ``test_build``: the script gpuwizard's own tests run, honouring GPUWIZARD_ROOT and
    GPUWIZARD_SHIM; never what a person gets.

    Raises:
        ExportError: a value bash cannot carry, or an action this script cannot express.
    """
    plan = source.plan
    for step in plan.steps:
        _check_step_id(step)
    runnable = [s for s in plan.steps if _runs_here(s)]
    root = ROOT if test_build else ""
    lines = [
        "#!/usr/bin/env bash",
        *_header(source, runnable, test_build),
        "set -Eeuo pipefail",
        *_secret_capture(runnable),
        "",
        runtime(test_build=test_build),
        *(["", *keycheck_lines()] if _checks_keys(runnable) else []),
        "",
        *_repair_lines(),
        "",
        f"readonly GW_TOTAL={len(runnable)}",
        *_made_for_lines(source),
        'gw_start "$@"',
        *_secret_lines(runnable),
    ]
    number = 0
    for step in plan.steps:
        lines.append("")
        if _runs_here(step):
            number += 1
            lines += _step_block(step, number, root)
        else:
            lines.append(_left_out(step))
    lines += ["", *_finish_lines(plan)]
    return "\n".join(lines) + "\n"


def _checks_keys(runnable: Sequence[StepPlan]) -> bool:
    return any(isinstance(a, Download) and a.is_key for step in runnable for a in step.actions)


def _made_for_comment(source: ExportSource) -> list[str]:
    made = identity(source.facts)
    return [
        f"# Made for: GPUs {one_line(made.gpus)} ({one_line(made.gpu_names)}), OS {one_line(made.os)},",
        f"#   CPU {one_line(made.arch)}, loaded NVIDIA driver branch {one_line(made.driver)}",
    ]


def _made_for_lines(source: ExportSource) -> list[str]:
    """The facts of the machine the plan was made on, for gw_check_host (GPUs not under WSL,
    where the Windows driver shows them and the PCI bus does not)."""
    made = identity(source.facts)
    gpus = "" if source.selection.wsl else made.gpus
    return [
        f"readonly GW_MADE_GPUS={quote(gpus)} GW_MADE_OS={quote(made.os)}",
        f"readonly GW_MADE_ARCH={quote(made.arch)} GW_MADE_DRIVER={quote(made.driver)}",
    ]


def _repair_lines() -> list[str]:
    """The runner's own two repair commands (DpkgConfigure, AptFixBroken), for gw_repair_dpkg."""
    repair = StepPlan("repair-dpkg", "Repair an interrupted package database", "", ())
    return [
        "gw_repair_commands() {",
        "  case $1 in",
        "    configure)",
        textwrap.indent(_run_line(repair, DpkgConfigure(), ""), "    "),
        "      ;;",
        "    fix)",
        textwrap.indent(_run_line(repair, AptFixBroken(), ""), "    "),
        "      ;;",
        "  esac",
        "}",
    ]


def _runs_here(step: StepPlan) -> bool:
    return Target.HOST in step.targets and bool(step.actions)


# ------------------------------------------------------------------------------------ header
def _header(source: ExportSource, runnable: Sequence[StepPlan], test_build: bool) -> list[str]:
    steps = [
        f"#   {n:>2}. {one_line(s.title)}{' (reboot)' if s.reboot else ''}"
        for n, s in enumerate(runnable, 1)
    ]
    return [
        "# deploy.sh: set up this server for PyTorch the way gpuwizard planned it.",
        "#",
        f"# Made by gpuwizard {one_line(source.version)} from its plan for: {one_line(source.machine)}",
        *(f"#   {one_line(line)}" for line in source.plan.summary),
        f"# Steps ({len(runnable)}):",
        *steps,
        "#",
        "# Usage: sudo bash deploy.sh [--reboot] [--install-resume-unit] [--force]",
        "#   It runs the plan's steps in order: the same commands, with the same environment, as",
        "#   gpuwizard's own run. A finished step leaves a marker in",
        f"#   {MARKER_DIR}/ and is skipped when the script runs again; delete that",
        "#   folder to start over. When the machine must reboot, the script stops with exit status 10:",
        "#   reboot, run it again, and it continues where it stopped. With --reboot (or",
        "#   GPUWIZARD_REBOOT=1) it reboots by itself. With --install-resume-unit, the first reboot",
        f"#   installs {UNIT}, which runs it again after each boot until every step is",
        "#   done, then removes itself. Exit status: 0 done, 10 reboot needed, else a step failed.",
        "#   Steps that had nothing to do on the machine above are left out (see the comments",
        "#   below): run this on the same kind of machine, made from the same image. Its first run",
        "#   refuses, before any change, a host whose GPUs, OS, CPU architecture or loaded driver",
        "#   branch differ from that machine's (named below); --force (GPUWIZARD_FORCE=1) runs it anyway.",
        *_made_for_comment(source),
        *_secrets_header(runnable),
        *(
            [
                "# TEST BUILD for gpuwizard's own tests: it honours GPUWIZARD_ROOT and GPUWIZARD_SHIM.",
                "# Never run it on a server; `gpuwizard export` writes the script to run.",
            ]
            if test_build
            else []
        ),
    ]


def _secrets_header(runnable: Sequence[StepPlan]) -> list[str]:
    secrets = _secrets(runnable)
    if not secrets:
        return []
    return [
        "# Secrets: each is asked for on the terminal (twice) unless its variable is set; it stays in",
        "#   the script's memory, is fed to the command on stdin and is never written anywhere:",
        *(f"#   {_secret_env(s)}: {one_line(s.prompt)}" for s in secrets),
    ]


def _secrets(steps: Sequence[StepPlan]) -> tuple[SecretRef, ...]:
    return secrets_in(Plan(0, tuple(steps)))


def _secret_ident(secret: SecretRef) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", secret.name).lower()


def _secret_env(secret: SecretRef) -> str:
    return f"GPUWIZARD_SECRET_{_secret_ident(secret).upper()}"


def _secret_capture(runnable: Sequence[StepPlan]) -> list[str]:
    """Secrets given in the environment move into this shell's memory before anything runs."""
    secrets = {_secret_ident(s): s for s in _secrets(runnable)}
    if not secrets:
        return []
    lines = [
        "# A secret given in the environment is taken into this shell's memory and removed from",
        "# the environment at once: no command this script runs ever inherits it.",
    ]
    for ident, secret in secrets.items():
        lines += [
            "# shellcheck disable=SC2034 # gw_read_secret reads it by name",
            f"gw_env_{ident}=${{{_secret_env(secret)}-}}",
            f"unset {_secret_env(secret)}",
        ]
    return lines


def _secret_lines(runnable: Sequence[StepPlan]) -> list[str]:
    """Ask for every secret up front, before anything changes, unless its steps are all done."""
    lines: list[str] = []
    seen: dict[str, str] = {}
    for secret in _secrets(runnable):
        ident = _secret_ident(secret)
        if seen.setdefault(ident, secret.name) != secret.name:
            raise ExportError(
                f"secrets {seen[ident]!r} and {secret.name!r} would share one variable"
            )
        users = [s.id for s in runnable if secret.name in {x.name for x in _secrets([s])}]
        pending = " && ".join(f"gw_is_done {quote(u)}" for u in users)
        lines += [
            f"gw_secret_{ident}=''",
            f"if ! {{ {pending}; }}; then",
            wrap(
                [
                    "gw_read_secret",
                    f"gw_secret_{ident}",
                    f"gw_env_{ident}",
                    _secret_env(secret),
                    quote(one_line(secret.prompt)),
                ]
            ),
            "fi",
        ]
    return lines


# ------------------------------------------------------------------------------------- steps
def _step_block(step: StepPlan, number: int, root: str) -> list[str]:
    title = one_line(step.title)
    head = [f"# --- {number}. {step.id}: {title}", *comment_lines(step.why)]
    if step.reboot:
        opening = wrap(
            ["if", "gw_begin_reboot", str(number), quote(step.id), f"{quote(title)};", "then"], ""
        )
        return [*head, opening, _reboot_line(step), "fi"]
    body = [text for action in step.actions for text in _action_lines(step, action, root)]
    body.append(f"{INDENT}gw_done {quote(step.id)}")
    if step.needs_reboot:
        body.append(f"{INDENT}gw_say '    takes effect at the next boot'")
    opening = wrap(["if", "gw_begin", str(number), quote(step.id), f"{quote(title)};", "then"], "")
    return [*head, opening, *body, "fi"]


def _left_out(step: StepPlan) -> str:
    if Target.HOST not in step.targets:
        return (
            f"# --- {step.id}: {one_line(step.title)}: for container images only, not run on a host"
        )
    return (
        f"# --- {step.id}: {one_line(step.title)}: nothing to do on the machine this was planned on"
    )


def _finish_lines(plan: Plan) -> list[str]:
    waiting: list[str] = []
    for step in plan.steps:
        if not _runs_here(step):
            continue
        if step.reboot:
            waiting = []
        elif step.needs_reboot:
            waiting.append(one_line(step.title))
    words = ["gw_finish", quote("every step of the plan is finished")]
    if waiting:
        words.append(quote(f"    reboot once more to finish: {'; '.join(waiting)}"))
    return [wrap(words, "")]


def _reboot_line(step: StepPlan) -> str:
    """The runner runs a reboot step's first action only, so anything more is refused."""
    if len(step.actions) != 1 or isinstance(step.actions[0], WriteFile):
        raise ExportError(f"step {step.id}: a reboot step must be exactly one command")
    run = step.actions[0].command()
    if run.answers or run.creates:
        raise ExportError(
            f"step {step.id}: a reboot command with prompts or `creates` cannot be exported"
        )
    return wrap(
        [
            "gw_reboot",
            quote(step.id),
            *env_words(step.id, run.env),
            "--",
            *argv_words(step.id, run.argv),
        ]
    )


# ----------------------------------------------------------------------------------- actions
def _action_lines(step: StepPlan, action: Action, root: str) -> list[str]:  # noqa: RET503 - exhaustive
    match action:
        case Download():
            return [_fetch_line(step, action, root)]
        case WriteFile():
            return [_write_text(step, action, root)]
        case (
            AptUpdate() | AptInstall() | AptUpgrade() | AptHold() | DpkgConfigure() | AptFixBroken()
        ):
            return [_run_line(step, action, root)]
        case DnfInstall() | DnfUpgrade() | DnfModuleEnable() | DnfVersionLock():
            return [_run_line(step, action, root)]
        case Service() | Reboot() | Command():
            return [_run_line(step, action, root)]
        case PipInstall() | PipDownload() | Venv() | UvVenv() | UvPythonInstall():
            return [_run_line(step, action, root)]
        case UvPipInstall() | CondaCreate() | MiniforgeInstall():
            return [_run_line(step, action, root)]
        case _:  # pragma: no cover - exhaustive
            assert_never(action)


def _run_line(step: StepPlan, op: Program, root: str) -> str:
    """gw_run with the care the runner gives the operation (care_for): an interrupted dpkg
    repaired first, apt's lists lock retried (its lock timeout does not cover that lock)."""
    run, care = op.command(), care_for(op)
    words = ["gw_run"]
    if run.ok_codes != (0,):
        words += ["--ok", quote(" ".join(str(code) for code in run.ok_codes))]
    if run.answers:
        words.append("--stdin")
    if care.retry_on_lock:
        words.append("--retry")
    if care.repair_first:
        words.append("--repair")
    words += [*env_words(step.id, run.env), "--", *argv_words(step.id, run.argv)]
    if run.answers:
        words = ["gw_replies", *_reply_words(step, run), "|", *words]
    return wrap([*_creates_words(step, run, root), *words])


def _fetch_line(step: StepPlan, fetch: Download, root: str) -> str:
    """gpuwizard-fetch URL DEST [options]: the target has no gpuwizard, so gw_fetch does it."""
    url, *options = argv_words(step.id, (fetch.url, *fetch.options()))
    target = rooted(step.id, "download destination", fetch.dest, root)
    return wrap(["gw_fetch", url, target, *options])


def _write_text(step: StepPlan, write: WriteFile, root: str) -> str:
    """A quoted here-document: its body reaches the file byte for byte, nothing expanded."""
    target = rooted(step.id, "file path", write.path, root)
    if "\0" in write.content:
        raise ExportError(
            f"step {step.id}: {write.path!r} would contain a NUL byte, which bash cannot write"
        )
    if not 0 <= write.mode <= 0o7777:
        raise ExportError(f"step {step.id}: {write.path!r} has no valid mode ({write.mode!r})")
    content = write.content
    trim = bool(content) and not content.endswith("\n")
    body = content + "\n" if trim else content
    delimiter = _delimiter(content)
    words = ["gw_write", target, f"{write.mode:04o}"]
    words += ["--trim-newline"] if trim else []
    words += ["--backup"] if write.backup else []
    return f"{wrap(words)} <<'{delimiter}'\n{body}{delimiter}"


def _delimiter(content: str) -> str:
    """A here-document delimiter that the content does not contain anywhere. Not containing it
    as a line would do for bash; shellcheck also takes an indented or trailing-space copy for a
    misplaced terminator (SC1039, SC1118), so no copy at all is kept in the body."""
    delimiter, n = HEREDOC, 0
    while delimiter in content:
        n += 1
        delimiter = f"{HEREDOC}_{n}"
    return delimiter


def _reply_words(step: StepPlan, run: Command) -> list[str]:
    """Replies fed on stdin in the plan's order; a secret as its in-memory variable."""
    words = []
    for reply in run.answers.values():
        if isinstance(reply, SecretRef):
            words.append(f'"$gw_secret_{_secret_ident(reply)}"')
        elif "\0" in reply:
            raise ExportError(f"step {step.id}: a reply to {run.argv[0]!r} contains a NUL byte")
        else:
            words.append(quote(reply))
    return words


def _creates_words(step: StepPlan, run: Command, root: str) -> list[str]:
    if run.creates is None:
        return []
    return ["[[", "-e", rooted(step.id, "`creates` path", run.creates, root), "]]", "||"]


def _check_step_id(step: StepPlan) -> None:
    if not _STEP_ID.fullmatch(step.id):
        raise ExportError(f"step id {step.id!r} cannot name a marker file")
