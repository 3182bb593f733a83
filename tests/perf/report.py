"""The performance report: every benchmark beside its anchor, measured in the same run on the same
machine, in one table (figure, ours, anchor, ratio, goal) plus a JSON copy.

Run: python -m tests.perf [--json PATH] [--quick] [--torch-python PATH]

On a shared machine an absolute time means little; a ratio to an anchor measured minutes apart
on the same CPUs means more. Anchors: `python -m torch.utils.collect_env` for detection (needs a
Python with torch), a bare Textual app's first frame, Textual's stock Log fed line by line, a
bare pexpect read loop, a bare training loop, a fixed 300-step benchmark run, pip installing
the same torch wheels as uv (from a local wheel folder: GPUWIZARD_TORCH_WHEELS, see
bench_torch_install.py), the same Debian plan step by step (read from the heavy chroot tier's last
run: perf-heavy-ahead.json). The flood rows have absolute targets (key answer, memory, reattach).
Prints figures and asserts nothing; a row whose anchor cannot run here says so.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

PERF = Path(__file__).parent
sys.path.insert(0, str(PERF))  # the bench_* scripts import each other's helpers by file

import bench_detect  # noqa: E402
import bench_flood  # noqa: E402
import bench_pty  # noqa: E402
import bench_torch_install  # noqa: E402
import bench_tui  # noqa: E402
import bench_verdict_time  # noqa: E402
import bench_worker_overhead  # noqa: E402

from gpuwizard.core.machine_words import counted  # noqa: E402


@dataclass(frozen=True)
class Row:
    figure: str
    ours: float
    anchor: float | None
    unit: str
    ratio: float | None
    """ours against the anchor, in the direction the goal reads (e.g. "x faster")."""
    goal: str
    met: bool | None
    note: str = ""


def median(values: list[float]) -> float:
    return statistics.median(values)


def detection(torch_python: str | None) -> list[Row]:
    python = bench_detect.torch_python(torch_python)
    if python is None:
        ours = median(
            bench_detect.wall_times([sys.executable, "-m", "gpuwizard", "detect", "--json"], 7)
        )
        return [
            Row(
                "detect --json (this machine)",
                ours,
                None,
                "ms",
                None,
                ">= 30x faster than collect_env",
                None,
                "no Python with torch here: set GPUWIZARD_TORCH_PYTHON",
            )
        ]
    versus = bench_detect.versus_collect_env(python)
    ratio = versus.times_faster
    return [
        Row(
            "detect --json vs torch.utils.collect_env",
            median(versus.ours_ms),
            median(versus.anchor_ms),
            "ms",
            ratio,
            f">= {bench_detect.GOAL_TIMES_FASTER}x faster",
            ratio >= bench_detect.GOAL_TIMES_FASTER,
            "wall time, whole process, this machine",
        )
    ]


def first_frame(runs: int) -> list[Row]:
    frames = bench_tui.first_frame(runs)
    return [
        Row(
            "TUI first frame vs a bare Textual app",
            median(frames.ours_ms),
            median(frames.bare_ms),
            "ms",
            frames.ratio,
            f"<= {bench_tui.GOAL_FIRST_FRAME_RATIO}x the bare app",
            frames.ratio <= bench_tui.GOAL_FIRST_FRAME_RATIO,
            "process start to header, 80x24 pty",
        )
    ]


def ingest(megabytes: int) -> list[Row]:
    ours, stock = bench_tui.ingest(megabytes)
    ratio = ours.lines_per_s / stock.lines_per_s
    return [
        Row(
            "log ingest vs the stock Log, line by line",
            ours.lines_per_s,
            stock.lines_per_s,
            "lines/s",
            ratio,
            f">= {bench_tui.GOAL_INGEST_RATIO}x",
            ratio >= bench_tui.GOAL_INGEST_RATIO,
            f"slowest key during it {ours.slowest_key_ms:.0f} ms; the pane holds {ours.held_lines:,} lines",
        )
    ]


def runner(megabytes: int, runs: int) -> list[Row]:
    ours, bare = bench_pty.versus_bare(megabytes, runs)
    ratio = median(ours) / median(bare)
    return [
        Row(
            "runner vs a bare pexpect read loop",
            median(ours),
            median(bare),
            "MB/s",
            ratio,
            f">= {bench_pty.GOAL_VERSUS_BARE}x",
            ratio >= bench_pty.GOAL_VERSUS_BARE,
            f"{megabytes} MB flood through a pty into the log file",
        )
    ]


def harness(torch_python: str | None, runs: int) -> list[Row]:
    python = bench_detect.torch_python(torch_python)
    if python is None:
        return [
            Row(
                "benchmark harness vs a bare training loop",
                0.0,
                None,
                "img/s",
                None,
                "<= 2% overhead",
                None,
                "no Python with torch here: set GPUWIZARD_TORCH_PYTHON",
            )
        ]
    args = bench_worker_overhead.parse_args(["--python", python, "--runs", str(runs)])
    worker, bare = bench_worker_overhead.measure(args)
    # Other load only ever slows a window down: on a shared machine the best window is the
    # cleaner figure (the JSON keeps the medians too).
    ours, anchor = max(f.best for f in worker), max(f.best for f in bare)
    overhead = (anchor - ours) / anchor * 100
    return [
        Row(
            "benchmark harness vs a bare training loop",
            ours,
            anchor,
            "img/s",
            ours / anchor,
            f"<= {bench_worker_overhead.TARGET_PERCENT:.0f}% overhead (>= 0.98x)",
            overhead <= bench_worker_overhead.TARGET_PERCENT,
            f"best window; medians {median([f.median for f in worker]):.1f} vs "
            f"{median([f.median for f in bare]):.1f} img/s; {args.model} {args.image_size}px on the "
            f"CPU, {counted(args.threads, 'thread')}, {args.runs} runs each",
        )
    ]


def verdict_time(torch_python: str | None, runs: int) -> list[Row]:
    figures = ("CPU benchmark: time to a verdict, stopping rule vs 300 fixed steps",
               "CPU benchmark: its figure, stopping rule vs 300 fixed steps")  # fmt: skip
    python = bench_detect.torch_python(torch_python)
    if python is None:
        missing = "no Python with torch here: set GPUWIZARD_TORCH_PYTHON"
        return [
            Row(figures[0], 0.0, None, "s", None, "shorter", None, missing),
            Row(figures[1], 0.0, None, "img/s", None, "<= 2% apart", None, missing),
        ]
    measured = bench_verdict_time.measure(python, runs)
    rule_s, long_s = median([m.rule_s for m in measured]), median([m.long_s for m in measured])
    ours = median([m.rule_figures["fp32"] for m in measured])
    anchor = median([m.long_figures["fp32"] for m in measured])
    apart = median([m.worst_apart_percent for m in measured])
    real = measured[-1].real_default
    target = bench_verdict_time.TARGET_PERCENT
    return [
        Row(
            figures[0], rule_s, long_s, "s", long_s / rule_s, "shorter (x faster)", rule_s < long_s,
            f"samples at the stop {[m.rule_samples['fp32'] for m in measured]} of at most "
            f"{bench_verdict_time.default_limit('cpu')}; a real default run took "
            f"{real.finished_s:.1f} s ({real.figures['fp32']:.1f} img/s); resnet18 64px batch 16 "
            f"fp32, 1 thread, {runs} run(s)",
        ),
        Row(
            figures[1], ours, anchor, "img/s", ours / anchor, f"<= {target:.0f}% apart",
            apart <= target,
            f"apart {', '.join(f'{m.worst_apart_percent:.1f}%' for m in measured)}; the default "
            "run is the long run's stream cut where the rule stops it (same minutes, same CPUs)",
        ),
    ]  # fmt: skip


def torch_install(runs: int) -> list[Row]:
    figure = "torch+torchvision install (uv, hashes) vs pip, same wheels"
    goal = f">= {bench_torch_install.GOAL_TIMES_FASTER}x faster"
    wheels = bench_torch_install.wheels_dir(None)
    try:
        result = bench_torch_install.measure(wheels, runs)
    except bench_torch_install.NotHere as missing:
        return [Row(figure, 0.0, None, "s", None, goal, None, f"not measured: {missing}")]
    ours, anchor = min(result.uv_s), min(result.pip_s)
    ratio = anchor / ours
    return [
        Row(
            figure,
            ours,
            anchor,
            "s",
            ratio,
            goal,
            ratio >= bench_torch_install.GOAL_TIMES_FASTER,
            f"fresh venv, {wheels}, offline; uv from an empty cache (warm cache: "
            f"{result.uv_warm_s:.1f} s); torch {result.installed}; best of {runs}",
        )
    ]


HEAVY_AHEAD = PERF.parent.parent / "perf-heavy-ahead.json"
"""Written by the heavy chroot tier's machines E and F (tests/chroot/heavy.py)."""


def fetch_ahead() -> list[Row]:
    """The heavy tier's last measurement: it takes minutes (two DKMS builds), so it is read."""
    figure = "the Debian plan in a real root, fetching ahead vs step by step"
    goal = "shorter (the ratio)"
    try:
        data = json.loads(HEAVY_AHEAD.read_text())
    except (OSError, ValueError):
        how = "not measured: run .venv/bin/python -m pytest tests/chroot/heavy.py -k e_f"
        return [Row(figure, 0.0, None, "s", None, goal, None, how)]
    ours, anchor = data["overlapped_s"], data["sequential_s"]
    ratio = anchor / ours
    fetched = ", ".join(data["fetched"])
    return [
        Row(figure, ours, anchor, "s", ratio, goal, ratio > 1.0,
            f"measured {data['when']} by tests/chroot/heavy.py (DKMS build in both); fetched ahead: {fetched}")
    ]  # fmt: skip


def flood(megabytes: int) -> list[Row]:
    result = bench_flood.measure(megabytes)
    live, again = result["live"], result["reattach"]
    size = f"{megabytes:,} MB flood"
    rows = [
        Row(
            f"{size}: slowest key answer",
            live["key_ms_max"],
            None,
            "ms",
            None,
            f"< {bench_flood.TARGET_KEY_MS} ms",
            live["key_ms_max"] < bench_flood.TARGET_KEY_MS,
            f"median {live['key_ms_median']:.0f} ms over {live['keys']} keys; the real runner on a simulated host",
        ),
        Row(
            f"{size}: TUI peak RSS",
            live["rss_peak_mb"],
            None,
            "MB",
            None,
            f"< {bench_flood.TARGET_RSS_MB} MB",
            live["rss_peak_mb"] < bench_flood.TARGET_RSS_MB,
            f"{live['left_out']:,} of {live['lines_received']:,} lines left out and counted; "
            f"events.jsonl {result['events_bytes'] / 1e3:,.0f} kB",
        ),
    ]
    if megabytes >= 1000:
        rows += [
            Row(
                f"reattach to a {result['log_bytes'] / 1e9:.1f} GB log: tail on screen",
                again["seconds"] * 1000,
                None,
                "ms",
                None,
                f"< {bench_flood.TARGET_REATTACH_S * 1000:.0f} ms",
                again["seconds"] < bench_flood.TARGET_REATTACH_S,
                f"{again['bytes_read'] / 1024:.0f} KiB of the log read",
            ),
            Row(
                f"reattach to a {result['log_bytes'] / 1e9:.1f} GB log: peak RSS",
                again["rss_peak_mb"],
                None,
                "MB",
                None,
                f"< {bench_flood.TARGET_RSS_MB} MB",
                again["rss_peak_mb"] < bench_flood.TARGET_RSS_MB,
            ),
        ]
    return rows


def number(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    digits = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2
    return f"{value:,.{digits}f} {unit}"


def table(rows: list[Row]) -> str:
    header = ("figure", "ours", "anchor", "ratio", "goal", "met")
    cells = [
        (
            r.figure,
            number(r.ours, r.unit),
            number(r.anchor, r.unit),
            f"{r.ratio:,.2f}x" if r.ratio is not None else "-",
            r.goal,
            {True: "yes", False: "NO", None: "n/a"}[r.met],
        )
        for r in rows
    ]
    widths = [max(len(str(c[i])) for c in [header, *cells]) for i in range(len(header))]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True))
        for row in [header, *cells]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"  {r.figure}: {r.note}" for r in rows if r.note]
    return "\n".join([*lines, "", "notes:", *notes])


def machine() -> dict[str, object]:
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "platform": platform.platform(),
    }


def use_bytecode_cache() -> None:
    """Every start in this report compiles its imports once, like an installed tool: bytecode goes
    to a private folder, never into a virtual environment (the torch one is read-only to us)."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir(), "gpuwizard-perf-pycache"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.perf", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument(
        "--json", type=Path, default=Path("perf-report.json"), help="where the JSON copy goes"
    )
    parser.add_argument("--torch-python", help="a Python with torch (else GPUWIZARD_TORCH_PYTHON)")
    parser.add_argument("--quick", action="store_true", help="fewer runs; the 200 MB flood only")
    args = parser.parse_args(argv)
    use_bytecode_cache()
    started, before = time.perf_counter(), machine()
    runs = 3 if args.quick else 5
    parts: list[tuple[str, Callable[[], list[Row]]]] = [
        ("detection", lambda: detection(args.torch_python)),
        ("first frame", lambda: first_frame(runs)),
        ("log ingest", lambda: ingest(100)),
        ("runner", lambda: runner(100, 2 if args.quick else 3)),
        ("harness", lambda: harness(args.torch_python, 2 if args.quick else 4)),
        ("verdict time", lambda: verdict_time(args.torch_python, 1 if args.quick else 2)),
        ("torch install", lambda: torch_install(1 if args.quick else 2)),
        ("fetching ahead", fetch_ahead),
        ("flood 200 MB", lambda: flood(200)),
        *([] if args.quick else [("flood 1 GB", lambda: flood(1000))]),
    ]
    rows: list[Row] = []
    for name, measure in parts:
        began = time.perf_counter()
        rows += measure()
        print(f"  {name}: {time.perf_counter() - began:.0f} s", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - started
    print(table(rows))
    print(
        f"\n{len(rows)} figures in {elapsed:.0f} s; load average {before['load_average']} before, {os.getloadavg()} after"
    )
    report = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seconds": elapsed,
        "machine": before,
        "load_average_after": os.getloadavg(),
        "rows": [asdict(r) for r in rows],
    }
    args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"JSON copy: {args.json}")
    return 0
