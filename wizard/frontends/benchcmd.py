"""``gpuwizard bench``: the benchmark without the TUI, printing as it goes.

By default it runs in the environment the wizard built (the journal names it; else the default
path); where that does not exist, in the best PyTorch already on the machine (the one that fits
the driver and GPUs, has torchvision, is the session's python3, is newest), and it says which.
``--python`` picks any interpreter that has torch and torchvision. It needs no root: the results
go to the wizard's state directory when it can write there, else to the user's.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from gpuwizard.bench import protocol as bp
from gpuwizard.bench.launch import BenchSpec, allreduce_max_mib
from gpuwizard.bench.protocol import MODES, Mode
from gpuwizard.bench.session import BenchSession
from gpuwizard.core.facts import HostFacts
from gpuwizard.core.isolation import ISOLATED
from gpuwizard.core.machine_words import counted
from gpuwizard.frontends.benchprogress import Progress
from gpuwizard.machine import Machine, user_state_dir
from gpuwizard.machine.detect import detect_host
from gpuwizard.recommend.existing import best_torch_env
from gpuwizard.recommend.table import load_table
from gpuwizard.runner.control import current

EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130
DEFAULT_ENV = "/opt/gpuwizard/envs/pytorch"
DATALOAD_DIR = "/var/tmp"


class BenchUsageError(ValueError):
    """Bad input: the CLI prints it as one line and exits 2."""


def parse_modes(text: str) -> tuple[Mode, ...]:
    wanted = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in wanted if m not in MODES]
    if unknown or not wanted:
        raise BenchUsageError(
            f"--modes {text!r}: {'unknown mode ' + repr(unknown[0]) if unknown else 'no mode given'}"
            f" (choose from {', '.join(MODES)})"
        )
    return tuple(m for m in MODES if m in wanted)


def python_argv(
    args: argparse.Namespace, machine: Machine, facts: HostFacts
) -> tuple[tuple[str, ...], str]:
    """(argv that runs the benchmark's Python, which one it is in words)."""
    if args.python:
        path = Path(args.python)
        if machine.simulated:  # a path inside the simulated machine: its environment is two up
            return machine.python_in(str(path.parent.parent)), args.python
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise BenchUsageError(f"--python {args.python}: not an executable file")
        # as Machine.python_in: the current folder is never searched
        return (str(path), ISOLATED), args.python
    env, interpreter, unread = built_env(machine.state_dir)
    if interpreter is not None:  # the setup used an environment that was here: that one
        return machine.python_of(env, interpreter), f"{interpreter} (the environment {env})"
    if machine.host().exists(f"{env}/bin/python"):
        return machine.python_in(env), f"{env}/bin/python (gpuwizard's environment{unread})"
    argv, said = existing_python(machine, facts, env)
    return argv, said + unread


def existing_python(machine: Machine, facts: HostFacts, env: str) -> tuple[tuple[str, ...], str]:
    """The best PyTorch already on the machine, where the wizard has built none."""
    best = best_torch_env(facts, load_table())
    if best is None:
        raise BenchUsageError(
            f"no environment at {env} and no PyTorch found on this machine: run the wizard "
            "first, or pass --python PATH (a Python with torch)"
        )
    found = best.env
    # The simulated machine runs its stand-in for the environment at that path.
    argv = machine.python_of(found.path, found.python)
    verdict = "" if best.fits else f"; {best.summary}"
    said = (
        f"{found.python} ({found.words()}, found as {found.found_by[0]}{verdict}; "
        f"gpuwizard's environment {env} does not exist)"
    )
    return argv, said


def built_env(state_dir: Path) -> tuple[str, str | None, str]:
    """The environment the wizard's last run set up, else the default path; with the
    interpreter of one that was here already (``--use-env``), and what to say when the run's
    record cannot be read (another user's, or damaged): then the default path is a guess."""
    try:
        run = current(state_dir, None)
        journal, problem = run.journal, run.problem
    except OSError as error:
        journal, problem = None, error.strerror or str(error)
    if journal is None:
        said = f"; gpuwizard's record in {state_dir} cannot be read ({problem})" if problem else ""
        return DEFAULT_ENV, None, said
    env = journal.data.selection.env
    return env.path, env.existing, ""


def writable_state_dir(preferred: Path) -> Path:
    if os.access(preferred if preferred.exists() else preferred.parent, os.W_OK):
        return preferred
    return user_state_dir()


def run_bench(args: argparse.Namespace, machine: Machine) -> int:
    modes = parse_modes(args.modes) if args.modes is not None else MODES
    facts = detect_host(machine.host())
    detected = len(facts.hardware.gpus)
    gpus = detected if args.gpus is None else args.gpus
    if not 0 <= gpus <= detected:
        raise BenchUsageError(f"--gpus {gpus}: this machine has {counted(detected, 'GPU')}")
    if args.batch_size is not None and args.batch_size < 1:
        raise BenchUsageError(f"--batch-size {args.batch_size}: must be 1 or more")
    memory = min((g.model.memory_gib or 0 for g in facts.hardware.gpus), default=0)
    python, interpreter = python_argv(args, machine, facts)
    spec = BenchSpec(
        python=python,
        gpus=gpus,
        modes=modes,
        batch_size=args.batch_size,
        compile=args.compile,
        dataload_dir=None if args.no_dataload else args.dataload or DATALOAD_DIR,
        ddp=not args.no_ddp,
        allreduce_max_mib=allreduce_max_mib(memory),
    )
    host = machine.host()
    session = BenchSession(
        spec, writable_state_dir(machine.state_dir), facts, nvml=host.nvml, env=dict(machine.env)
    )
    out = sys.stderr if args.json else sys.stdout
    print(
        f"benchmark: {session.title}, with {interpreter}; results in {session.directory}", file=out
    )
    progress = Progress(out, sys.stderr)
    session.start()
    try:
        while session.running():
            progress.show(session.poll())
            session.job.wait(0.2)
    except KeyboardInterrupt:
        session.cancel()
        session.job.wait()
        progress.close()
        summary = session.finish()
        print(f"stopped; what ran is in {summary.results_md}", file=sys.stderr)
        return EXIT_INTERRUPTED
    progress.show(session.poll())
    progress.close()
    summary = session.finish()
    if args.json:
        print(summary.results_json.read_text(encoding="utf-8"), end="")
    else:
        print("", summary.results_md.read_text(encoding="utf-8"), sep="\n", end="")
    outcome = session.job.outcome
    ran = any(isinstance(e, bp.Result) for e in outcome.events)
    return EXIT_OK if outcome.ok and ran else EXIT_FAILED
