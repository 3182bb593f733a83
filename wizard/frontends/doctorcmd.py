"""``gpuwizard doctor``: diagnose this machine (or a simulated one), print the findings, and
optionally write a redacted support bundle.

Needs no root: it reads what it can and says what it could not. Exit codes, like the validators
people already trust: 0 healthy (warnings allowed), 1 a problem found, 2 nothing could be
checked (or bad input, as for every gpuwizard command).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from gpuwizard.core.safetext import json_text
from gpuwizard.doctor.bundle import write_bundle
from gpuwizard.doctor.diagnose import Diagnosis, diagnose
from gpuwizard.doctor.observed import LogText
from gpuwizard.doctor.readings import LOG_TAIL_BYTES
from gpuwizard.doctor.report import text_lines, to_json
from gpuwizard.frontends.inputs import InputError, read_tail
from gpuwizard.machine import Machine, user_state_dir


class DoctorUsageError(ValueError):
    """Bad input: the CLI prints it as one line and exits 2."""


def named_logs(paths: list[Path] | None) -> tuple[LogText, ...]:
    """The end of each log named with --log (a training log can be any size)."""
    logs = []
    for path in paths or []:
        try:
            logs.append(LogText(f"log {path.name}", str(path), read_tail(path, LOG_TAIL_BYTES)))
        except InputError as error:
            raise DoctorUsageError(f"--log {path}: {error}") from None
    return tuple(logs)


def bundle_path(requested: str) -> Path:
    """--bundle alone: a dated file here; --bundle DIR: that file in DIR; else the path given."""
    name = f"gpuwizard-bundle-{time.strftime('%Y%m%d-%H%M%S')}.tar.gz"
    if not requested:
        return Path(name)
    path = Path(requested)
    return path / name if path.is_dir() else path


def run_doctor(args: argparse.Namespace, machine: Machine) -> int:
    logs = named_logs(args.log)
    host = machine.host()
    if args.env is not None and not host.is_dir(args.env):
        raise DoctorUsageError(f"--env {args.env}: no such folder (give a venv or conda env)")
    extra = () if machine.simulated else (user_state_dir(),)
    result: Diagnosis = diagnose(host, machine.state_dir, logs, env=args.env, bench_dirs=extra)
    bundle = None
    if args.bundle is not None:
        target = bundle_path(args.bundle)
        try:
            bundle = write_bundle(target, result, host, machine.state_dir, logs)
        except OSError as error:
            raise DoctorUsageError(f"--bundle {target}: {error.strerror}") from None
    if args.json:
        data = to_json(result.report, result.facts)
        if bundle is not None:
            data["bundle"] = str(bundle.path)
        print(json_text(data))
    else:
        print("\n".join(text_lines(result.report)))
    if bundle is not None:
        redacted = ", ".join(f"{n} {kind}" for kind, n in bundle.redacted.items()) or "nothing"
        print(
            f"\nSupport bundle: {bundle.path} ({len(bundle.files)} files; redacted: {redacted})",
            file=sys.stderr if args.json else sys.stdout,
        )
    return result.report.exit_code
