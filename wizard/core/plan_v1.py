"""Plans of schema 1, where every command was ``Run(argv)``: read into typed operations.

A journal written before operations were typed (a run in progress, or waiting for its reboot,
when gpuwizard was upgraded) must still resume, and export. Each v1 ``Run`` becomes the typed
operation whose ``command()`` is exactly that Run: the same argv, environment, prompts, exit
codes, limits and lock retry. Whatever does not render back byte for byte stays what it was, a
``Command`` with its argv; so reading can only ever fall back to the plain command, never turn
one into an operation that would run something else. One difference is allowed, on purpose:
the ``-I`` every Python gpuwizard starts now gets (issue 28): the same module or script runs,
isolated, whether it is read into an operation (pip, venv) or stays a command (the verify probe).
Steps keep their number of actions, so the journal's ``next_action`` still points at the same
one. Pure: JSON-ready data in and out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypedDict

from gpuwizard.core.codec import CodecError, from_jsonable, to_jsonable
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
    DownloadCheck,
    DpkgConfigure,
    Fingerprint,
    MiniforgeInstall,
    NoPin,
    PipDownload,
    PipInstall,
    Program,
    Reboot,
    SecretRef,
    Service,
    Sha256,
    UvPipInstall,
    UvPythonInstall,
    UvVenv,
    Venv,
)


class _Limits(TypedDict):
    timeout_s: float
    silence_timeout_s: float


@dataclass(frozen=True)
class RunV1:
    """Schema 1's only command action, as it was stored."""

    KIND: ClassVar[str] = "run"
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    answers: Mapping[str, str | SecretRef] = field(default_factory=dict)
    creates: str | None = None
    timeout_s: float = 3600
    silence_timeout_s: float = 600
    retry_on_lock: bool = False
    ok_codes: tuple[int, ...] = (0,)


def upgrade_plan(data: Mapping[str, Any], path: str = "$") -> dict[str, Any]:
    """A schema-1 plan's JSON as schema 2: each ``run`` action read into a typed operation.

    Raises:
        CodecError: the plan is not a schema-1 plan; the message names the field.
    """
    steps = data.get("steps")
    if not isinstance(steps, list):
        raise CodecError(f"{path}.steps: expected a list")
    return {
        **data,
        "schema": 2,
        "steps": [_upgrade_step(s, f"{path}.steps[{i}]") for i, s in enumerate(steps)],
    }


def _upgrade_step(step: object, path: str) -> object:
    if not isinstance(step, Mapping) or not isinstance(step.get("actions"), list):
        raise CodecError(f"{path}.actions: expected a list")
    actions = [_upgrade_action(a, f"{path}.actions[{i}]") for i, a in enumerate(step["actions"])]
    return {**step, "actions": actions}


def _upgrade_action(action: object, path: str) -> object:
    if not isinstance(action, Mapping) or action.get("kind") != RunV1.KIND:
        return action  # a file write: the same in both schemas (the codec checks it)
    run: RunV1 = from_jsonable(RunV1, action, path)
    return to_jsonable(recognise(run))


def recognise(run: RunV1) -> Program:
    """The typed operation that runs exactly this command, else the command as it is."""
    for candidate in _candidates(run):
        if _renders_as(candidate, run):
            return candidate
    return Command(
        _isolated(run.argv),
        env=run.env,
        answers=run.answers,
        creates=run.creates,
        timeout_s=run.timeout_s,
        silence_timeout_s=run.silence_timeout_s,
        ok_codes=run.ok_codes,
    )


def _renders_as(op: Program, run: RunV1) -> bool:
    command = op.command()
    return (
        _as_schema_1(command.argv) == run.argv
        and dict(command.env) == dict(run.env)
        and dict(command.answers) == dict(run.answers)
        and command.creates == run.creates
        and command.timeout_s == run.timeout_s
        and command.silence_timeout_s == run.silence_timeout_s
        and command.ok_codes == run.ok_codes
        and isinstance(op, AptUpdate) == run.retry_on_lock
    )


def _isolated(argv: tuple[str, ...]) -> tuple[str, ...]:
    """A schema-1 ``python -c``/``-m`` command as gpuwizard starts a Python now: with ``-I``."""
    is_python = re.fullmatch(r"python[0-9.]*", argv[0].rsplit("/", 1)[-1]) is not None
    if is_python and argv[1:2] in (("-m",), ("-c",)):
        return (argv[0], ISOLATED, *argv[1:])
    return argv


def _as_schema_1(argv: tuple[str, ...]) -> tuple[str, ...]:
    """The argv without the isolation flag schema 1 did not write (``python -I -m pip``)."""
    if argv[1:2] == (ISOLATED,) and argv[2:3] in (("-m",), ("-c",)):
        return (argv[0], *argv[2:])
    return argv


def _candidates(run: RunV1) -> Iterator[Program]:
    """Guesses from the argv's shape; ``recognise`` keeps only one that renders back exactly."""
    limits = _Limits(timeout_s=run.timeout_s, silence_timeout_s=run.silence_timeout_s)
    argv = run.argv
    match argv[:1]:
        case ("apt-get",) | ("apt-mark",) | ("dpkg",):
            yield from _debian(argv, limits)
        case ("dnf",):
            yield from _dnf(argv, limits)
        case (program,) if program == DOWNLOAD_TOOL:
            yield from _download(argv, limits)
        case _:
            yield from _python(argv, limits)
            yield from _system(argv, limits)


def _names(words: Sequence[str]) -> bool:
    """Package names or requirements, never an option read as one."""
    return bool(words) and not any(word.startswith("-") for word in words)


def _debian(argv: tuple[str, ...], limits: _Limits) -> Iterator[Program]:
    yield AptUpdate(**limits)
    yield AptUpgrade(**limits)
    yield DpkgConfigure(**limits)
    yield AptFixBroken(**limits)
    if argv[1:2] == ("hold",) and _names(argv[2:]):
        yield AptHold(argv[2:], **limits)
    if "install" in argv and _names(packages := argv[argv.index("install") + 1 :]):
        yield AptInstall(packages, **limits)
        yield AptInstall(packages, recommends=False, **limits)


def _dnf(argv: tuple[str, ...], limits: _Limits) -> Iterator[Program]:
    yield DnfUpgrade(**limits)
    match argv:
        case ("dnf", "-y", "-q", "install", *packages) if _names(packages):
            yield DnfInstall(tuple(packages), **limits)
        case ("dnf", "-y", "-q", "module", "enable", stream):
            yield DnfModuleEnable(stream, **limits)
        case ("dnf", "versionlock", "add", spec):
            yield DnfVersionLock(spec, **limits)


def _download(argv: tuple[str, ...], limits: _Limits) -> Iterator[Program]:
    match argv[1:]:
        case (url, dest, *options):
            pass
        case _:
            return
    words = dict(zip(options[::2], options[1::2], strict=False))
    checks: list[DownloadCheck] = [NoPin()]
    if "--sha256" in options:
        checks.append(Sha256(words.get("--sha256", "")))
    if "--fingerprint" in options:
        checks.append(Fingerprint(words.get("--fingerprint", "")))
    member = options[options.index("--member") + 1] if "--member" in options[:-1] else None
    for check in checks:
        dearmor = "--dearmor" in options
        # A key checked by fingerprint and kept armoured (dnf's): what ``armor`` means now.
        armor = isinstance(check, Fingerprint) and not dearmor
        yield Download(url, dest, check, member, dearmor, armor, **limits)


def _python(argv: tuple[str, ...], limits: _Limits) -> Iterator[Program]:
    match argv:
        case (python, "-m", "pip", "install", *rest) if python.endswith("/bin/python"):
            yield from _pip_install(python.removesuffix("/bin/python"), tuple(rest), limits)
        case (
            python,
            "-m",
            "pip",
            "download",
            *_,
            "--index-url",
            index,
            "--dest",
            dest,
            "-r",
            hashes,
        ):
            yield PipDownload(python.removesuffix("/bin/python"), index, dest, hashes, **limits)
        case (python, "-m", "venv", "--clear", path):
            yield Venv(python, path, **limits)
        case (uv, "venv", "--seed", "--python", version, path):
            yield UvVenv(uv, version, path, **limits)
        case (uv, "venv", "--seed", "--clear", "--python", version, path):
            yield UvVenv(uv, version, path, **limits)
        case (uv, "venv", "--clear", "--python", version, path):  # as since the pinned pip
            yield UvVenv(uv, version, path, **limits)
        case (uv, "pip", "install", "--python", python, *rest) if python.endswith("/bin/python"):
            yield from _uv_pip_install(uv, python.removesuffix("/bin/python"), tuple(rest), limits)
        case (uv, "python", "install", version):
            yield UvPythonInstall(uv, version, **limits)
        case (conda, "create", "--yes", "--quiet", "--prefix", path, python, "pip"):
            yield CondaCreate(conda, path, python.removeprefix("python="), **limits)


def _pip_install(env: str, rest: tuple[str, ...], limits: _Limits) -> Iterator[Program]:
    quiet, force = "--quiet" in rest, "--force-reinstall" in rest
    index = rest[rest.index("--index-url") + 1] if "--index-url" in rest[:-1] else None
    skip = int(quiet) + int(force) + (2 if index is not None else 0)
    if _names(rest[skip:]):
        yield PipInstall(env, rest[skip:], index, quiet, force, **limits)


def _uv_pip_install(uv: str, env: str, rest: tuple[str, ...], limits: _Limits) -> Iterator[Program]:
    again: tuple[str, ...] = ()
    while rest[:1] == ("--reinstall-package",) and len(rest) > 1:
        again, rest = (*again, rest[1]), rest[2:]
    index = rest[rest.index("--index-url") + 1] if "--index-url" in rest[:-1] else None
    rest = rest[2:] if index is not None else rest
    match rest:
        case ("--verify-hashes", "-r", hashes):
            yield UvPipInstall(uv, env, (), index, hashes, again, **limits)
        case _ if _names(rest):
            yield UvPipInstall(uv, env, rest, index, reinstall=again, **limits)


def _system(argv: tuple[str, ...], limits: _Limits) -> Iterator[Program]:
    match argv:
        case ("systemctl", "enable" | "start" | "restart" as verb, unit):
            yield Service(verb, unit, **limits)
        case ("reboot",):
            yield Reboot(**limits)
        case ("bash", installer, "-b", "-p", prefix):
            yield MiniforgeInstall(installer, prefix, **limits)
