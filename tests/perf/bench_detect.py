"""Benchmark: wall time of `gpuwizard detect --json` on a recorded host (target: < 150 ms).

Run: python tests/perf/bench_detect.py [--runs N] [--profile NAME]
Prints figures; asserts nothing (shared machines are noisy). The number that matters is the
median of whole-process runs, as a user would see it: interpreter start, imports, detection,
sizing checks and JSON output.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

TARGET_MS = 150


def wall_times(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - start) * 1000)
    return times


def in_process_breakdown(profile: str) -> dict[str, float]:
    code = (
        "import time; t0 = time.perf_counter()\n"
        "import gpuwizard.cli\n"
        "t1 = time.perf_counter()\n"
        "import io, contextlib\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    gpuwizard.cli.main(['detect', '--json', '--simulate', '{profile}'])\n"
        "t2 = time.perf_counter()\n"
        "print((t1 - t0) * 1000, (t2 - t1) * 1000)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    imports, work = (float(v) for v in out.split())
    return {"imports": imports, "detect+assess+json": work}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--profile", default="h100x8-ubuntu2204-fresh")
    args = parser.parse_args()
    argv = [sys.executable, "-m", "gpuwizard.cli", "detect", "--json", "--simulate", args.profile]
    times = wall_times(argv, args.runs)
    startup = wall_times([sys.executable, "-c", "pass"], args.runs)
    breakdown = in_process_breakdown(args.profile)
    print(f"gpuwizard detect --json --simulate {args.profile}, {args.runs} runs")
    print(
        f"  wall time   median {statistics.median(times):6.1f} ms   min {min(times):6.1f} ms   (target < {TARGET_MS} ms)"
    )
    print(f"  python -c pass      {statistics.median(startup):6.1f} ms")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print(
            "  note: PYTHONDONTWRITEBYTECODE is set, so every run recompiles the imports (slower)"
        )
    for name, value in breakdown.items():
        print(f"  {name:<18} {value:6.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
