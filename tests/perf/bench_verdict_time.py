"""Benchmark: the stopping rule's time to a verdict and figures against a fixed 300-step run.

The CPU benchmark's time to a verdict under the stopping rule against a fixed long run of 300
timed steps, and how far apart their figures are (issue 27 §3-4; goal: <= 2%).

Run: python tests/perf/bench_verdict_time.py [--python PATH] [--runs N] [--device cuda]

Each run is one worker process with ``--fixed --steps 300`` and otherwise the worker's CPU
defaults (warm-up, one step per sample), on the harness row's model (resnet18, 64 px, batch 16,
fp32, one OpenMP thread, for the same reason as there). The rule decides from the samples alone,
so the default run is that same stream cut where the rule stops it (or at the default limit):
its time to a verdict is the long run's (worker start to its finished event, torch's import
included) less the samples after each mode's stop, and its figure is the median of the samples up
to the stop; the long run's figure is the median of all 300 steps' samples. Both therefore come from the same minutes on the same CPUs, which on a
shared machine matters more than anything else here. One real default run checks the cut: its
own time and figures are printed beside. ``--device cuda`` does the same for every mode of the
real benchmark (resnet50 at 224 px, the GPU defaults) where a GPU is at hand: the issue's
prepared script, under 6 minutes on an H200. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

WORKER = Path(__file__).resolve().parents[2] / "wizard" / "bench" / "gpu_worker.py"


def load_worker() -> ModuleType:
    """The worker script as a module (its rule and defaults), so that this file runs from a bare
    checkout on a GPU machine with only the standard library and the target's torch."""
    spec = importlib.util.spec_from_file_location("gpu_worker_for_perf", WORKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


gpu_worker = load_worker()
TARGET_PERCENT = 2.0
LONG_STEPS = 300
MODEL = ("--model", "resnet18", "--image-size", "64", "--batch-size", "16")


@dataclass(frozen=True)
class Run:
    """One worker run: per mode, (seconds since the worker started, img/s) of each sample; the
    worker's own figure per mode (the median of its samples); when it finished."""

    samples: dict[str, list[tuple[float, float]]]
    figures: dict[str, float]
    finished_s: float


@dataclass(frozen=True)
class VerdictTime:
    rule_s: float
    """The long run less the samples the rule would not have taken."""
    rule_samples: dict[str, int]
    rule_figures: dict[str, float]
    long_s: float
    long_figures: dict[str, float]
    real_default: Run
    """A separate run with the defaults, to check the cut."""

    def apart_percent(self, mode: str) -> float:
        return (
            abs(self.rule_figures[mode] - self.long_figures[mode]) / self.long_figures[mode] * 100
        )

    @property
    def worst_apart_percent(self) -> float:
        return max(self.apart_percent(mode) for mode in self.long_figures)


def run_worker(python: str, device: str, *extra: str, threads: int = 1) -> Run:
    model = MODEL if device == "cpu" else ()  # on a GPU the real thing: resnet50, 224 px
    modes = "fp32" if device == "cpu" else "fp32,tf32,amp-fp16,amp-bf16"
    argv = [python, str(WORKER), "--device", device, "--modes", modes, *model, *extra]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    events = [json.loads(line) for line in done.stdout.splitlines()]
    samples: dict[str, list[tuple[float, float]]] = {}
    for e in events:
        if e["kind"] == "sample":
            samples.setdefault(e["mode"], []).append((e["t"], e["images_per_s"]))
    figures = {e["mode"]: e["images_per_s"] for e in events if e["kind"] == "result"}
    return Run(samples, figures, events[-1]["seconds"])


def default_limit(device: str) -> int:
    """The samples a default run takes at most in a mode (its --steps over its --sample-every)."""
    args = gpu_worker.parse_args([])
    gpu_worker.fill_defaults(args, device)
    return int(args.steps) // int(args.sample_every)


def cut(long: Run, limit: int, real: Run) -> VerdictTime:
    """Each mode's stream cut where the default rule stops it (or at the default limit)."""
    stops, figures, saved = {}, {}, 0.0
    for mode, samples in long.samples.items():
        rates = [rate for _, rate in samples]
        stop = next((n for n in range(1, limit + 1) if gpu_worker.steady(rates[:n])), limit)
        stops[mode], figures[mode] = stop, statistics.median(rates[:stop])
        saved += samples[-1][0] - samples[stop - 1][0]
    return VerdictTime(
        long.finished_s - saved, stops, figures, long.finished_s, dict(long.figures), real
    )


def measure(python: str, runs: int = 1, device: str = "cpu") -> list[VerdictTime]:
    limit, measured = default_limit(device), []
    for _ in range(runs):
        long = run_worker(python, device, "--fixed", "--steps", str(LONG_STEPS))
        real = run_worker(python, device)
        measured.append(cut(long, limit, real))
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--python", default=sys.executable, help="a Python with torch")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--device", choices=("cpu", "cuda"), default="cpu",
        help="cuda: every mode of resnet50 at 224 px with the GPU defaults (about 4 minutes on "
        "an H200), for docs/decisions.md",
    )  # fmt: skip
    args = parser.parse_args()
    for one in measure(args.python, args.runs, args.device):
        print(
            f"to a verdict: rule {one.rule_s:.1f} s, {LONG_STEPS} fixed steps {one.long_s:.1f} s; "
            f"a real default run {one.real_default.finished_s:.1f} s"
        )
        for mode, long in one.long_figures.items():
            print(
                f"  {mode}: rule {one.rule_figures[mode]:,.1f} img/s after "
                f"{one.rule_samples[mode]} samples, {LONG_STEPS} steps {long:,.1f} img/s, apart "
                f"{one.apart_percent(mode):.2f}% (target {TARGET_PERCENT:.0f}%); the real default "
                f"run {one.real_default.figures.get(mode, 0):,.1f} img/s"
            )


if __name__ == "__main__":
    main()
