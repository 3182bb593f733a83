"""Benchmark: how fast a headless `apply` that needs the MOK password, with no terminal and no
password given, refuses (exit 2, before any change). Issue 14's target: under a second.

Run: python -m tests.perf.bench_secret_refusal [--runs N]

Prints figures; asserts nothing (shared machines are noisy). Whole-process runs as a person or a
CI job sees them: interpreter start, imports, detection of the simulated Secure Boot host,
planning, the refusal.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from tests.sim.conftest import GPUWIZARD, T4_DEBIAN, SimHost

TARGET_S = 1.0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as folder:
        host = SimHost(T4_DEBIAN, Path(folder) / "state" / "gpuwizard")
        host.enable_secure_boot()
        times = []
        for _ in range(runs):
            started = time.monotonic()
            result = subprocess.run(
                [*GPUWIZARD, "apply", "--yes", "--simulate", host.profile],
                stdin=subprocess.DEVNULL, capture_output=True, env=host.cli_env(), check=False,
            )  # fmt: skip
            times.append(time.monotonic() - started)
            if result.returncode != 2:
                print(f"unexpected exit {result.returncode}: {result.stderr.decode()[-300:]}")
                return 1
    median = statistics.median(times)
    print(f"apply without a MOK password, no terminal: median {median:.2f} s over {runs} runs")
    print(f"  min {min(times):.2f} s, max {max(times):.2f} s; target < {TARGET_S:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
