"""Benchmark: the pexpect driver under an output flood (T28), against a bare pexpect read loop
and `cat` of the same bytes.

Run: python tests/perf/bench_pty.py [--mb 200] [--long-mb 5]
A fake program writes MB megabytes of 100-byte lines as fast as it can, then one LONG_MB line
without a newline. Prints (a) throughput into the log file (target >= 15 MB/s), (b) the peak RSS
of a process that only runs the driver (target < 200 MB), (c) how long `cat` of the same bytes
to /dev/null takes, and the driver running that `cat` through its pty, (d) the driver against a
bare pexpect loop (``read_nonblocking(65536)`` into a file, nothing else) on the same flood, in
alternating runs (goal: >= 0.75x). Asserts nothing: shared machines are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpuwizard.runner.pty import run_command

TALKER = Path(__file__).parents[1] / "fakes" / "talker.py"
TARGET_MB_S = 15
TARGET_RSS_MB = 200
GOAL_VERSUS_BARE = 0.75
ENV = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"}


def peak_rss_kib() -> int:
    """VmHWM: ru_maxrss would include the parent's peak, carried across fork and exec."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])


def drive(log_path: str, argv: list[str]) -> None:
    """The measured process: imports and runs only the driver, then reports as JSON."""
    counts = {"lines": 0, "calls": 0}

    def count(lines: list[str]) -> None:
        counts["lines"] += len(lines)
        counts["calls"] += 1

    rss_before_kib = peak_rss_kib()
    with Path(log_path).open("wb") as log:
        started = time.perf_counter()
        result = run_command(
            argv, env=ENV, log=log, on_lines=count, timeout_s=600, silence_timeout_s=60
        )
        elapsed = time.perf_counter() - started
    report = {
        "seconds": elapsed,
        "bytes_out": result.bytes_out,
        "status": result.describe(),
        "rss_before_kib": rss_before_kib,
        "rss_peak_kib": peak_rss_kib(),
        **counts,
    }
    print(json.dumps(report))


def bare(log_path: str, argv: list[str]) -> None:
    """The anchor: pexpect's own chunked read loop into a file, and nothing else."""
    import pexpect

    with Path(log_path).open("wb") as log:
        started = time.perf_counter()
        child = pexpect.spawn(
            argv[0],
            argv[1:],
            env=ENV,
            maxread=65536,
            echo=False,
            dimensions=(50, 200),
            use_poll=True,
        )
        while True:
            try:
                log.write(child.read_nonblocking(65536, timeout=0.05))
            except pexpect.TIMEOUT:
                continue
            except pexpect.EOF:
                break
        child.close()
        elapsed = time.perf_counter() - started
    print(json.dumps({"seconds": elapsed, "rss_peak_kib": peak_rss_kib()}))


def versus_bare(megabytes: float = 100, runs: int = 3) -> tuple[list[float], list[float]]:
    """MB/s into the log file: (ours, the bare loop), alternating runs on the same flood."""
    flood = [sys.executable, str(TALKER), "flood", str(megabytes)]
    ours, plain = [], []
    with tempfile.TemporaryDirectory(prefix="bench-pty-") as tmp:
        for _ in range(runs):
            for mode, into in (("--drive", ours), ("--bare", plain)):
                report = measured(Path(tmp, "flood.log"), flood, mode)
                into.append(int(report["log_bytes"]) / 1e6 / float(report["seconds"]))
    return ours, plain


def measured(
    log_path: Path, argv: list[str], mode: str = "--drive"
) -> dict[str, float | int | str]:
    out = subprocess.run(
        [sys.executable, __file__, mode, str(log_path), "--", *argv],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    report: dict[str, float | int | str] = json.loads(out)
    report["log_bytes"] = log_path.stat().st_size
    log_path.unlink()
    return report


def show(title: str, report: dict[str, float | int | str]) -> None:
    seconds, size = float(report["seconds"]), int(report["log_bytes"])
    print(f"{title}")
    print(f"  status            {report['status']}")
    print(
        f"  log file          {size / 1e6:.1f} MB (bytes read: {int(report['bytes_out']) / 1e6:.1f} MB)"
    )
    print(f"  time              {seconds:.2f} s")
    print(f"  (a) throughput    {size / 1e6 / seconds:.1f} MB/s  (target >= {TARGET_MB_S})")
    rss_mb, base_mb = int(report["rss_peak_kib"]) / 1024, int(report["rss_before_kib"]) / 1024
    print(
        f"  (b) peak RSS      {rss_mb:.1f} MB; {base_mb:.1f} MB before running  (target < {TARGET_RSS_MB})"
    )
    print(f"  display lines     {report['lines']} in {report['calls']} on_lines calls")


def timed_cat(path: Path) -> float:
    started = time.perf_counter()
    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=200)
    parser.add_argument("--long-mb", type=float, default=5)
    parser.add_argument("--drive", metavar="LOG", help=argparse.SUPPRESS)
    parser.add_argument("--bare", metavar="LOG", help=argparse.SUPPRESS)
    parser.add_argument("argv", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.drive:
        drive(args.drive, args.argv)
        return 0
    if args.bare:
        bare(args.bare, args.argv)
        return 0
    flood = [sys.executable, str(TALKER), "flood", str(args.mb), str(args.long_mb)]
    with tempfile.TemporaryDirectory(prefix="bench-pty-") as tmp:
        work = Path(tmp)
        show(
            f"driver <- fake flood ({args.mb:g} MB of lines + one {args.long_mb:g} MB line)",
            measured(work / "flood.log", flood),
        )
        data = work / "flood.bin"
        with data.open("wb") as sink:
            started = time.perf_counter()
            subprocess.run(flood, stdout=sink, check=True)
        generate_s = time.perf_counter() - started
        cat_s = timed_cat(data)
        print("(c) for comparison, the same bytes without a pty")
        print(f"  fake flood -> file  {generate_s:.2f} s  ({data.stat().st_size / 1e6:.1f} MB)")
        print(f"  cat -> /dev/null    {cat_s:.2f} s")
        show(
            "driver <- cat of the same bytes through the pty",
            measured(work / "cat.log", ["cat", str(data)]),
        )
    ours, plain = versus_bare(args.mb)
    print(
        f"(d) driver {statistics.median(ours):.1f} MB/s, bare pexpect loop "
        f"{statistics.median(plain):.1f} MB/s: {statistics.median(ours) / statistics.median(plain):.2f}x "
        f"(goal >= {GOAL_VERSUS_BARE}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
