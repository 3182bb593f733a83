"""The stopping rule on synthetic sample streams (issue 27 §3): a mode stops once its last five
samples lie within 1% of their median; steady streams stop early, noisy and drifting ones run to
the limit, and where it stops the figure agrees with a long run's. test_worker.py holds the first
cases (steady, warming up, noisy, drifting down) and the timed loop; these add the rest."""

from __future__ import annotations

import random
import statistics
import types
from collections.abc import Iterator

import pytest

from gpuwizard.bench import gpu_worker
from gpuwizard.bench.gpu_worker import STEADY_TOLERANCE, STEADY_WINDOW, steady

LONG_RUN_SAMPLES = 100
"""300 timed steps in samples of 3, the issue's long run."""


def stop_point(stream: list[float]) -> int | None:
    """How many samples the rule takes before it stops (None: it never does in this stream)."""
    return next((n for n in range(1, len(stream) + 1) if steady(stream[:n])), None)


@pytest.mark.parametrize(
    ("stream", "stops_after"),
    [
        pytest.param([1000.0] * 4, None, id="four samples are never enough"),
        pytest.param([0.0] * 8, None, id="nothing measured is not steady"),
        pytest.param([990.0, 1000, 1000, 1000, 1010], 5, id="exactly 1% either side: steady"),
        pytest.param([989.0, 1000, 1000, 1000, 1000, 1000], 6, id="just past 1%: one more"),
        pytest.param([600.0 + 40 * n for n in range(12)], None, id="drifting up: never"),
        pytest.param(
            [1000.0, 1001, 700, 1000, 999, 1001, 1000, 1002, 998], 8,
            id="a neighbour's hiccup: five clean samples after it",
        ),
        pytest.param(
            [1000.0 * (1 - 0.002 * n) for n in range(8)], 5,
            id="a drift under the tolerance stops: the rule's known limit",
        ),
    ],
)  # fmt: skip
def test_the_rule_on_streams(stream: list[float], stops_after: int | None) -> None:
    assert stop_point(stream) == stops_after


def test_the_window_and_tolerance_are_the_issues() -> None:
    assert (STEADY_WINDOW, STEADY_TOLERANCE) == (5, 0.01)


def noisy(seed: int, sigma: float, ramp: int = 3) -> Iterator[float]:
    """A GPU's samples: a few warming up from 80%, then Gaussian noise around 1000 img/s."""
    rng = random.Random(seed)
    for n in range(ramp):
        yield 1000.0 * (0.8 + 0.2 * n / ramp)
    while True:
        yield 1000.0 * rng.gauss(1.0, sigma)


def timed_run(
    monkeypatch: pytest.MonkeyPatch, values: Iterator[float], steps: int, fixed: bool
) -> list[float]:
    """The worker's timed loop fed with these samples (3 steps each, as on a GPU)."""
    monkeypatch.setattr(gpu_worker, "sample_fields", lambda *_: {"images_per_s": next(values)})
    run = types.SimpleNamespace(
        args=types.SimpleNamespace(steps=steps, sample_every=3, fixed=fixed),
        sync=lambda: None,
        events=types.SimpleNamespace(emit=lambda kind, **fields: None),
    )
    samples = gpu_worker.timed_samples(run, "tf32", 256, lambda: None)  # type: ignore[arg-type]
    return [s["images_per_s"] for s in samples]


@pytest.mark.parametrize("seed", range(40))
def test_where_a_quiet_gpu_stops_its_figure_is_within_2_percent_of_a_long_run(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.3% noise: it stops within the default 60 steps, its median within 2% of 300 steps'."""
    early = timed_run(monkeypatch, noisy(seed, 0.003), steps=60, fixed=False)
    long = timed_run(monkeypatch, noisy(seed, 0.003), steps=3 * LONG_RUN_SAMPLES, fixed=True)
    assert len(early) < 20 and len(long) == LONG_RUN_SAMPLES
    difference = abs(statistics.median(early) - statistics.median(long)) / statistics.median(long)
    assert difference <= 0.02


@pytest.mark.parametrize("seed", range(10))
def test_a_noisy_gpu_runs_to_the_limit(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """3% noise (a neighbour's load, clocks hunting): five samples never agree within 1%."""
    assert len(timed_run(monkeypatch, noisy(seed, 0.03), steps=60, fixed=False)) == 20


def test_the_simulated_worker_uses_the_same_rule() -> None:
    from gpuwizard.sim import bench_python

    assert bench_python.steady is steady
