"""Run an exported deploy.sh against a simulated host, under the real bash.

The script is the test build (``render_bash(source, test_build=True)``); the one a person runs
has none of the hooks below. It gets an environment in which nothing real can change
(ARCHITECTURE M3, M4):

- ``GPUWIZARD_SHIM`` names a wrapper that hands every planned command to the shim, as the
  runner's ``Tools.shim`` does, so absolute programs (``/opt/gpuwizard/envs/x/bin/python``) are
  stand-ins too;
- ``PATH`` is one folder: wrappers for the tools the script itself calls by name (curl, sha256sum
  and python3 go to ``wizard/sim/script_tools.py``, systemctl to the shim) and links to a fixed
  list of harmless tools (coreutils, grep, awk, flock); any other name is "command not found";
- ``GPUWIZARD_ROOT`` is the sandbox root, so every file the script writes lands in the sandbox;
- ``GPUWIZARD_SANDBOX`` tells the stand-ins which sandbox they play.

The fake reboot is the shim's own: it applies the reboot to the sandbox (new boot_id, pending
boot effects) and returns, and the script then exits 10 as it does on a real machine, where the
reboot ends it. ``run_until_done`` runs the script again after each such exit.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuwizard.core.isolation import ISOLATED
from gpuwizard.sim.sandbox import SIM_ENV, Sandbox

SHIM_PROGRAM = "gpuwizard-shim"
SCRIPT_TOOLS = ("curl", "sha256sum", "python3")
SHIM_TOOLS = ("systemctl",)
HARMLESS = (
    "awk", "base64", "cat", "chmod", "cmp", "cp", "dirname", "flock", "grep", "mkdir", "mktemp",
    "mv", "paste", "rm", "sleep", "sort", "truncate", "uname",
)  # fmt: skip
"""What deploy.sh runs for real: it only ever touches paths under GPUWIZARD_ROOT."""
EXIT_REBOOT = 10
TIMEOUT_S = 120


@dataclass(frozen=True)
class ScriptRun:
    code: int
    output: str
    """stdout and stderr together, in order."""


def _wrapper(folder: Path, name: str, command: Sequence[str]) -> None:
    path = folder / name
    path.write_text(f'#!/bin/sh\nexec {shlex.join(command)} "$@"\n')
    path.chmod(0o755)


def make_pathshims(folder: Path, python: str = sys.executable) -> Path:
    """Fill ``folder`` with the wrappers and links described above; returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    # -I: the stand-ins never import from the folder the script was started in
    _wrapper(folder, SHIM_PROGRAM, (python, ISOLATED, "-m", "gpuwizard.sim.shim"))
    for tool in SCRIPT_TOOLS:
        _wrapper(folder, tool, (python, ISOLATED, "-m", "gpuwizard.sim.script_tools", tool))
    for tool in SHIM_TOOLS:
        _wrapper(folder, tool, (python, ISOLATED, "-m", "gpuwizard.sim.shim", tool))
    for tool in HARMLESS:
        found = shutil.which(tool, path="/usr/bin:/bin")
        if found is None:
            raise FileNotFoundError(f"{tool} is needed to run deploy.sh in the simulation")
        link = folder / tool
        if not link.exists():
            link.symlink_to(found)
    return folder


def script_env(
    sandbox: Sandbox, shims: Path, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A small, fixed environment: the caller's own never reaches the script."""
    return {
        "PATH": str(shims),
        "HOME": str(sandbox.directory),
        "LANG": "C.UTF-8",
        "GPUWIZARD_ROOT": str(sandbox.root),
        "GPUWIZARD_SHIM": str(shims / SHIM_PROGRAM),
        SIM_ENV: str(sandbox.directory),
        **(extra or {}),
    }


def run_script(
    script: Path,
    sandbox: Sandbox,
    shims: Path,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    timeout_s: float = TIMEOUT_S,
) -> ScriptRun:
    """One run of deploy.sh on the simulated host, stdin from /dev/null, in the sandbox folder."""
    bash = shutil.which("bash", path="/usr/bin:/bin") or "/bin/bash"
    done = subprocess.run(
        [bash, str(script), *args],
        env=script_env(sandbox, shims, env),
        cwd=sandbox.directory,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=timeout_s,
        check=False,
    )
    return ScriptRun(done.returncode, done.stdout.decode("utf-8", "replace"))


def run_until_done(
    script: Path,
    sandbox: Sandbox,
    shims: Path,
    args: Sequence[str] = ("--reboot",),
    env: Mapping[str, str] | None = None,
    max_runs: int = 5,
) -> list[ScriptRun]:
    """Run deploy.sh, and again after each exit 10 (its reboot), until it ends otherwise."""
    runs = [run_script(script, sandbox, shims, args, env)]
    while runs[-1].code == EXIT_REBOOT and len(runs) < max_runs:
        runs.append(run_script(script, sandbox, shims, args, env))
    return runs
