"""Fail when the code that builds or drives the real machine was not executed by the test suite.

Every test that reaches the CLI once passed ``--simulate``, and ``apply`` crashed on every real
machine. So CI runs the suite under coverage.py (branch coverage, subprocesses included) and
this script reads the result: every line of the functions below (the real host door, the real
backend, the real reboot, the real runner and its launch through systemd-run) must have run,
and every branch of the functions that choose between the real and the simulated machine.

Usage (after ``PYTEST_ADDOPTS=--cov python -m pytest``, which leaves .coverage here):
    python tools/check_real_paths.py [--data-file .coverage]
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import coverage


@dataclass(frozen=True)
class Gate:
    module: str
    function: str
    """The qualified name, as coverage.py's JSON report names it (Class.method)."""
    needs: Literal["lines", "branches"]
    why: str


GATES = (
    # The door to the real machine.
    Gate("gpuwizard.machine.detect", "local_host", "lines", "the real host"),
    Gate(
        "gpuwizard.machine.host",
        "SubprocessRunner.__call__",
        "branches",
        "real commands, incl. missing/denied/slow tools",
    ),
    Gate("gpuwizard.machine.host", "_is_dir", "lines", "a folder this user may not enter"),
    Gate("gpuwizard.machine.host", "Host.read_bytes", "lines", "files on the real machine"),
    Gate("gpuwizard.machine.host", "Host.listdir", "lines", "folders on the real machine"),
    Gate("gpuwizard.machine.host", "session_environ", "lines", "the real session's PATH"),
    Gate("gpuwizard.machine.host", "Host.foreign", "lines", "whose files the doctor may run"),
    Gate(
        "gpuwizard.doctor.readings",
        "read_arch_lists",
        "lines",
        "an environment's own Python asked for its arch list",
    ),
    # The real machine as front ends drive it.
    Gate("gpuwizard.frontends.cli", "real_backend", "lines", "the real backend"),
    Gate(
        "gpuwizard.frontends.cli",
        "reboot_this_machine",
        "lines",
        "the real reboot (its command captured)",
    ),
    Gate("gpuwizard.frontends.cli", "require_root", "branches", "root and not root"),
    Gate("gpuwizard.frontends.cli", "has_nvidia_gpu", "lines", "the real GPU check before the TUI"),
    # Real or simulated: both sides.
    Gate(
        "gpuwizard.frontends.cli",
        "simulated_profile",
        "branches",
        "--simulate given, missing, wrong",
    ),
    Gate("gpuwizard.frontends.cli", "host_for", "branches", "real and simulated detection"),
    Gate("gpuwizard.frontends.cli", "backend_for", "branches", "real and simulated backends"),
    Gate(
        "gpuwizard.frontends.cli",
        "machine_for",
        "branches",
        "real and simulated read-only machines",
    ),
    Gate("gpuwizard.frontends.cli", "tui_backend", "branches", "real GPU, no GPU, --simulate"),
    Gate(
        "gpuwizard.frontends.benchcmd",
        "python_argv",
        "branches",
        "bench's Python on the real machine and the simulation",
    ),
    Gate(
        "gpuwizard.frontends.benchcmd",
        "existing_python",
        "branches",
        "an existing environment's Python, real and simulated, or none",
    ),
    Gate(
        "gpuwizard.frontends.cli",
        "cmd_apply",
        "branches",
        "apply on the real machine and the simulation",
    ),
    # The real runner and its launch.
    Gate("gpuwizard.runner.control", "launch", "branches", "systemd-run and a new session"),
    Gate(
        "gpuwizard.runner.__main__", "main", "lines", "python -m gpuwizard.runner on this machine"
    ),
    Gate("gpuwizard.runner.__main__", "parse", "lines", "its arguments"),
)


def json_report(data_file: str) -> dict[str, dict[str, object]]:
    cov = coverage.Coverage(data_file=data_file)
    cov.load()
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cov.json_report(outfile=out.name, show_contexts=False)
        files: dict[str, dict[str, object]] = json.loads(Path(out.name).read_text())["files"]
    return {str(Path(name).resolve()): data for name, data in files.items()}


def source_file(module: str) -> str:
    found = inspect.getsourcefile(importlib.import_module(module))
    assert found is not None, module
    return str(Path(found).resolve())


def check(gate: Gate, files: dict[str, dict[str, object]]) -> list[str]:
    """What the gate misses, as readable lines (empty when it holds)."""
    path = source_file(gate.module)
    functions = files.get(path, {}).get("functions", {})
    assert isinstance(functions, dict)
    found = functions.get(gate.function)
    if found is None:
        return [f"never measured ({path} has no data for it)"]
    source = Path(path).read_text(encoding="utf-8").splitlines()
    problems = [f"line {n} not run: {source[n - 1].strip()}" for n in found["missing_lines"]]
    if gate.needs == "branches":
        problems += [
            f"branch {a} -> {'exit' if b < 0 else b} not taken: {source[a - 1].strip()}"
            for a, b in found["missing_branches"]
        ]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-file", default=".coverage")
    args = parser.parse_args(argv)
    if not Path(args.data_file).exists():
        print(f"no coverage data at {args.data_file}: run the tests with --cov first")
        return 2
    files = json_report(args.data_file)
    failed = 0
    for gate in GATES:
        problems = check(gate, files)
        mark = "ok  " if not problems else "MISS"
        print(f"{mark} {gate.module}:{gate.function} ({gate.needs}: {gate.why})")
        for problem in problems:
            print(f"       {problem}")
        failed += bool(problems)
    print(f"\n{len(GATES) - failed} of {len(GATES)} real-machine paths are exercised by the tests")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
