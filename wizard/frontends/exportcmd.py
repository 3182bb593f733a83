"""``gpuwizard export``: the chosen setup as files, without the TUI.

What is exported, in order of preference: the plan of an answers file (``--config``) planned
for this machine; else the plan of the choices given as flags (``--driver-branch 580``); else
the setup the wizard's runs made here (``wizard/setup/setups.py``: the last run's plan, or the last
one that changed the machine); else a fresh plan of the recommendation
with default choices, said so on stderr. One format without ``-o``
goes to stdout, byte for byte as ``-o`` would write it; otherwise the files are written
(atomically) into the output folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpuwizard.core.request import SetupRequest
from gpuwizard.export.answers import Answers
from gpuwizard.export.formats import FORMATS, ExportFile, render
from gpuwizard.export.source import ALREADY_SET_UP, ExportError, ExportSource
from gpuwizard.machine import Machine
from gpuwizard.machine.detect import detect_host
from gpuwizard.recommend.table import load_table
from gpuwizard.runner.files import write_files
from gpuwizard.setup.flow import PlanRefused
from gpuwizard.setup.plan import Replay, plan_request
from gpuwizard.setup.setups import SetupError, exportable_setup

DEFAULT_DIR = "gpuwizard-export"


class ExportUsageError(ValueError):
    """Bad input (exit 2) or nothing fits this host (exit 3): one line."""

    def __init__(self, message: str, code: int = 2, *, no_gpu: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.no_gpu = no_gpu


def parse_formats(text: str | None) -> list[str]:
    if text is None:
        return list(FORMATS)
    wanted = [f.strip() for f in text.split(",") if f.strip()]
    unknown = [f for f in wanted if f not in FORMATS]
    if unknown or not wanted:
        raise ExportUsageError(
            f"--format {text!r}: {'unknown format ' + repr(unknown[0]) if unknown else 'none given'}"
            f" (choose from {', '.join(FORMATS)})"
        )
    return list(dict.fromkeys(wanted))


def source_planned(
    machine: Machine, answers: Answers | None, accept: bool, asked: SetupRequest
) -> ExportSource:
    facts = detect_host(machine.host())
    request = answers.request if answers else asked
    # export has no --force: its --accept-changes plans anyway (it changes nothing here).
    replay = (
        Replay(answers, accept, force=accept, force_flag="--accept-changes") if answers else None
    )
    planned = plan_request(load_table(), facts, request, replay)
    if isinstance(planned, PlanRefused):
        raise ExportUsageError(planned.why, planned.code, no_gpu=planned.no_gpu)
    return ExportSource(planned.plan, planned.selection, facts)


FRESH_NOTE = "no setup was run here yet: exported the recommended plan for this machine"


def choose_source(
    machine: Machine, answers: Answers | None, accept: bool, asked: SetupRequest
) -> tuple[ExportSource, str | None]:
    """The source, and a note to print once the export succeeded: the answers planned for this
    machine; else the choices given on the command line, planned here; else the setup the
    wizard's runs made here; else a fresh plan, said so."""
    if answers is not None or asked.pinned:
        return source_planned(machine, answers, accept, asked), None
    try:
        setup = exportable_setup(machine.state_dir)
    except SetupError as error:
        raise ExportUsageError(str(error)) from None
    if setup is not None:
        return setup.source, setup.note
    return source_planned(machine, None, accept, asked), FRESH_NOTE


def run_export(
    args: argparse.Namespace,
    machine: Machine,
    answers: Answers | None,
    asked: SetupRequest | None = None,
) -> int:
    formats = parse_formats(args.format)
    source, note = choose_source(machine, answers, args.accept_changes, asked or SetupRequest())
    if source.already_set_up and note is None:
        note = ALREADY_SET_UP
    files: list[ExportFile] = []
    failed: str | None = None
    for name in formats:
        try:
            files += render(source, name)
        except ExportError as error:
            if args.format is not None:  # asked for by name: it must be made
                raise ExportUsageError(f"{name}: {error}") from None
            _say(f"{FORMATS[name].title}: not made: {error}")
            failed = failed or f"{name}: {error}"
    if not files:  # none could be made: say why, never "exported" nothing
        raise ExportUsageError(failed or "nothing to export")
    if args.output is None and len(formats) == 1 and len(files) == 1:
        to_stdout(files[0])
        _say(files[0].note)
        _say(note)
        return 0
    directory = args.output or Path(DEFAULT_DIR)
    if directory.exists() and not directory.is_dir():
        raise ExportUsageError(f"-o {directory}: that is a file; give a folder to write into")
    try:
        paths = write_files(directory, [(f.name, f.data, f.mode) for f in files])
    except OSError as error:
        raise ExportUsageError(f"-o {directory}: {error.strerror}") from None
    print(f"exported {source.machine}: {', '.join(source.plan.summary[:2])}")
    for path, file in zip(paths, files, strict=True):
        print(f"  {path}" + (f"\n    {file.note}" if file.note else ""))
    _say(note)
    return 0


def to_stdout(file: ExportFile) -> None:
    """The one file on stdout byte for byte: the bytes ``-o`` writes, never through the terminal
    sanitiser (``CleanStream``), which would change what the file says; compressed bytes never
    to a terminal."""
    if file.data != file.content.encode() and sys.stdout.isatty():
        raise ExportUsageError(
            f"{file.name} is gzip-compressed: send it to a file (> {file.name}) or use -o DIR"
        )
    sys.stdout.flush()
    sys.stdout.buffer.write(file.data)
    sys.stdout.buffer.flush()


def _say(note: str | None) -> None:
    if note:
        print(f"gpuwizard: {note}", file=sys.stderr)
