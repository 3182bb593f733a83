"""Benchmark: `gpuwizard detect --json` on this real machine and on a simulated one, beside
PyTorch's own environment report (`python -m torch.utils.collect_env`) measured in the same run.

Targets: real host < 150 ms median on an idle machine, simulated < 100 ms, neither importing
textual or torch. Prints figures; asserts nothing (shared machines are noisy).

Run: python tests/perf/bench_detect.py [--runs N] [--profile NAME] [--torch-python PATH]
(--torch-python defaults to $GPUWIZARD_TORCH_PYTHON; without one, collect_env is not measured.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

REAL_TARGET_MS = 150
SIMULATED_TARGET_MS = 100


def wall_times(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append((time.perf_counter() - start) * 1000)
    return times


def heavy_imports(args: list[str]) -> list[str]:
    """Which of textual, torch and the TUI a detect run imported (should be none)."""
    code = (
        "import sys, io, contextlib\n"
        "from gpuwizard.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    main({args!r})\n"
        "print(' '.join(m for m in ('textual', 'torch', 'gpuwizard.app') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def breakdown(args: list[str], runs: int) -> dict[str, float]:
    """Median in-process times: importing the CLI, then detecting and printing."""
    code = (
        "import time, io, contextlib; t0 = time.perf_counter()\n"
        "import gpuwizard.cli\n"
        "t1 = time.perf_counter()\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    gpuwizard.cli.main({args!r})\n"
        "print((t1 - t0) * 1000, (time.perf_counter() - t1) * 1000)\n"
    )
    rows = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        rows.append(tuple(float(v) for v in out.stdout.split()))
    return {
        "import gpuwizard.cli": statistics.median(r[0] for r in rows),
        "detect + findings + JSON": statistics.median(r[1] for r in rows),
    }


def line(name: str, times: list[float], target: str = "") -> str:
    return f"  {name:<34} median {statistics.median(times):7.1f} ms   min {min(times):7.1f} ms   {target}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--profile", default="h100x8-ubuntu2204-fresh")
    parser.add_argument("--torch-python", default=os.environ.get("GPUWIZARD_TORCH_PYTHON"))
    args = parser.parse_args()
    gpuwizard = [sys.executable, "-m", "gpuwizard"]
    real = ["detect", "--json"]
    simulated = ["--simulate", args.profile, "detect", "--json"]
    real_ms = wall_times([*gpuwizard, *real], args.runs)
    sim_ms = wall_times([*gpuwizard, *simulated], args.runs)
    print(f"gpuwizard detect --json, {args.runs} runs each (whole process, as a user sees it)")
    print(line("this machine (real host)", real_ms, f"(target < {REAL_TARGET_MS} ms)"))
    print(line(f"simulated {args.profile}", sim_ms, f"(target < {SIMULATED_TARGET_MS} ms)"))
    if args.torch_python:
        anchor = wall_times(
            [args.torch_python, "-m", "torch.utils.collect_env"], max(3, args.runs // 5)
        )
        ratio = statistics.median(anchor) / statistics.median(real_ms)
        print(line("python -m torch.utils.collect_env", anchor, f"(ours is {ratio:.0f}x faster)"))
    else:
        print("  collect_env: not measured (give --torch-python or GPUWIZARD_TORCH_PYTHON)")
    print(line("python -c pass", wall_times([sys.executable, "-c", "pass"], args.runs)))
    for name, ms in breakdown(real, max(3, args.runs // 3)).items():
        print(f"  real host: {name:<23} median {ms:7.1f} ms")
    for name, argv in (("real", real), ("simulated", simulated)):
        heavy = heavy_imports(argv)
        print(f"  {name}: imports {', '.join(heavy) if heavy else 'no textual, no torch'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
