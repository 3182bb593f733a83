"""Benchmark: wall time of `gpuwizard detect --json`, against `python -m torch.utils.collect_env`.

Run: python tests/perf/bench_detect.py [--runs N] [--profile NAME] [--torch-python PATH]

Prints figures; asserts nothing (shared machines are noisy). The number that matters is the
median of whole-process runs, as a user would see it: interpreter start, imports, detection,
sizing checks and JSON output. The anchor is PyTorch's own environment report on the same
machine, in the same run (runs alternate), where a Python with torch is found
(``--torch-python``, GPUWIZARD_TORCH_PYTHON, or /work/main/.venv-torch/bin/python).
Detection on the real machine is the fair comparison: collect_env looks at the real machine too.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

TARGET_MS = 150
"""This real machine, idle."""
SIMULATED_TARGET_MS = 100
GOAL_TIMES_FASTER = 30
HEAVY = (
    "textual", "torch", "yaml", "gpuwizard.frontends.app", "gpuwizard.recommend.engine",
    "gpuwizard.recommend.table",
)  # fmt: skip
"""Modules `detect` must not need: the TUI, torch, the solver, the whole table, a YAML parser."""
TORCH_PYTHONS = ("/work/main/.venv-torch/bin/python", ".venv-torch/bin/python")


def wall_times(argv: list[str], runs: int) -> list[float]:
    return [wall_time(argv) for _ in range(runs)]


@functools.cache
def bytecode_env() -> dict[str, str]:
    """The environment of every measured run: imports come from bytecode, as after pip install.

    Where PYTHONDONTWRITEBYTECODE is set (these machines set it), every run would compile every
    module it imports again, which no installed copy does; the bytecode goes to a private folder
    instead of the source tree, the same for gpuwizard and for the anchor.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="gpuwizard-bench-pycache-")
    return env


def wall_time(argv: list[str]) -> float:
    env = bytecode_env()
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    return (time.perf_counter() - start) * 1000


def torch_python(given: str | None = None) -> str | None:
    """A Python that has torch: the one given, GPUWIZARD_TORCH_PYTHON, or a known venv."""
    for candidate in (given, os.environ.get("GPUWIZARD_TORCH_PYTHON"), *TORCH_PYTHONS):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


@dataclass(frozen=True)
class VersusCollectEnv:
    ours_ms: list[float]
    """`gpuwizard detect --json` on this machine."""
    anchor_ms: list[float]
    """`python -m torch.utils.collect_env`, alternating with ours."""

    @property
    def times_faster(self) -> float:
        return statistics.median(self.anchor_ms) / statistics.median(self.ours_ms)


def versus_collect_env(python: str, runs: int = 9, anchor_runs: int = 3) -> VersusCollectEnv:
    ours_argv = [sys.executable, "-m", "gpuwizard", "detect", "--json"]
    anchor_argv = [python, "-m", "torch.utils.collect_env"]
    wall_time(ours_argv)  # warm the page cache and the bytecode for both
    wall_time(anchor_argv)
    ours, anchor = [], []
    for run in range(runs):
        ours.append(wall_time(ours_argv))
        if run % max(1, runs // anchor_runs) == 0 and len(anchor) < anchor_runs:
            anchor.append(wall_time(anchor_argv))
    return VersusCollectEnv(ours, anchor)


def in_process_breakdown(profile: str) -> dict[str, float]:
    code = (
        "import time; t0 = time.perf_counter()\n"
        "import gpuwizard.frontends.cli\n"
        "t1 = time.perf_counter()\n"
        "import io, contextlib\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    gpuwizard.frontends.cli.main(['detect', '--json', '--simulate', '{profile}'])\n"
        "t2 = time.perf_counter()\n"
        "print((t1 - t0) * 1000, (t2 - t1) * 1000)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=bytecode_env()
    ).stdout
    imports, work = (float(v) for v in out.split())
    return {"imports": imports, "detect+assess+json": work}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--profile", default="h100x8-ubuntu2204-fresh")
    parser.add_argument("--torch-python", help="a Python with torch, for collect_env")
    args = parser.parse_args()
    argv = [sys.executable, "-m", "gpuwizard", "detect", "--json", "--simulate", args.profile]
    wall_time(argv)  # the bytecode, once
    times = wall_times(argv, args.runs)
    startup = wall_times([sys.executable, "-c", "pass"], args.runs)
    breakdown = in_process_breakdown(args.profile)
    print(f"gpuwizard detect --json --simulate {args.profile}, {args.runs} runs")
    print(
        f"  wall time   median {statistics.median(times):6.1f} ms   min {min(times):6.1f} ms   (target < {SIMULATED_TARGET_MS} ms)"
    )
    print(f"  python -c pass      {statistics.median(startup):6.1f} ms")
    for name, value in breakdown.items():
        print(f"  {name:<18} {value:6.1f} ms")
    python = torch_python(args.torch_python)
    if python is None:
        print("collect_env: no Python with torch found (--torch-python or GPUWIZARD_TORCH_PYTHON)")
        return 0
    versus = versus_collect_env(python)
    print(
        f"this machine: gpuwizard detect --json median {statistics.median(versus.ours_ms):.0f} ms; "
        f"python -m torch.utils.collect_env median {statistics.median(versus.anchor_ms):.0f} ms: "
        f"{versus.times_faster:.1f}x faster (goal >= {GOAL_TIMES_FASTER}x; target < {TARGET_MS} ms)"
    )
    heavy = heavy_imports(["detect", "--json"])
    print(f"imports on the way: {', '.join(heavy) if heavy else 'none of ' + ', '.join(HEAVY)}")
    return 0


def heavy_imports(args: list[str]) -> list[str]:
    """Which of HEAVY a detect run on this machine imported (should be none)."""
    code = (
        "import sys, io, contextlib\n"
        "from gpuwizard.frontends.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    main({args!r})\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


if __name__ == "__main__":
    sys.exit(main())
