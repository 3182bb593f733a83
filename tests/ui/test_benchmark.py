"""The Benchmark screen fed by recorded event streams: a whole 8-GPU run, a worker that backs off
out of memory and then dies, and stopping a run. Pilot for behaviour, SVG snapshots for looks."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from textual.app import App
from textual.widgets import Static

from gpuwizard.bench import protocol as bp
from gpuwizard.bench.chart import ReferenceMark, reference_for
from gpuwizard.bench.references import load_references
from gpuwizard.bench.results import BenchSummary, collect, save
from gpuwizard.bench.verdict import judge, stopped
from gpuwizard.screens.benchmark import BenchmarkView
from gpuwizard.setup.flow import Again, Benchmarked
from tests.ui.pilots import ViewHarness

STREAMS = Path(__file__).parents[1] / "bench" / "streams"
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]
ABOUT = (
    "ResNet-50 training on synthetic data: four modes on one GPU, then AMP with DDP on all 8 GPUs."
)


def text_of(app: App[None], selector: str) -> str:
    """What a Static shows, as plain text (its content may be a Rich renderable)."""
    console = Console(width=100, file=io.StringIO(), record=True)
    console.print(app.screen.query_one(selector, Static).content)
    return console.export_text()


def events_of(name: str) -> list[bp.BenchEvent]:
    return [bp.parse_line(line) for line in (STREAMS / name).read_text().splitlines()]


class RecordedBench:
    """A BenchSource that replays a recorded stream, a few events per poll."""

    def __init__(
        self, stream: list[bp.BenchEvent | str], gpu: str, directory: Path, per_poll: int = 1000,
        problems: tuple[str, ...] = (),
    ) -> None:  # fmt: skip
        self.stream = stream
        self.gpu = gpu
        self.directory = directory
        self.per_poll = per_poll
        self.problems = problems
        self.started = self.cancelled = False
        self.given = 0
        self.hold_at: int | None = None
        """Give no event past this one (a picture of the run midway, whatever the machine's speed)."""

    @property
    def title(self) -> str:
        return self.gpu

    def start(self) -> None:
        self.started = True

    def poll(self) -> list[bp.BenchEvent | str]:
        end = self.given + self.per_poll
        batch = self.stream[self.given : end if self.hold_at is None else min(end, self.hold_at)]
        self.given += len(batch)
        return batch

    def running(self) -> bool:
        return self.started and not self.cancelled and self.given < len(self.stream)

    def cancel(self) -> None:
        self.cancelled = True

    def finish(self) -> BenchSummary:
        events = [e for e in self.stream[: self.given] if not isinstance(e, str)]
        collected = collect(events)
        verdict = judge(
            device="cuda", gpu_name=self.gpu.split("x ", 1)[-1], results=collected.results,
            references=load_references(), allreduce=collected.allreduce,
            dataload=collected.dataload, ooms=collected.ooms, nvswitch=True,
        )  # fmt: skip
        if self.cancelled:  # as BenchSession does
            verdict = stopped(verdict)
        problems = (*self.problems, *(("stopped before the end",) if self.cancelled else ()))
        json_path, _ = save(self.directory, events, verdict, self.gpu, problems, when=0.0)
        shown = Path(
            "/var/lib/gpuwizard/bench/20261202-153012/results.md"
        )  # the same in every picture
        return BenchSummary(verdict, json_path, shown, problems, self.cancelled)


def whole_run(directory: Path, per_poll: int = 1000) -> RecordedBench:
    stream: list[bp.BenchEvent | str] = ["── one GPU", *events_of("h100x8-sim.jsonl")]
    return RecordedBench(stream, "8x H100 SXM5 80GB", directory, per_poll)


def died_run(directory: Path) -> RecordedBench:
    died = "one GPU: the worker was killed by signal 9 before finishing: RuntimeError: CUDA error: an illegal memory access was encountered"
    stream: list[bp.BenchEvent | str] = ["── one GPU", *events_of("a100-oom-then-died.jsonl"), died]
    return RecordedBench(stream, "1x A100 SXM4 40GB", directory, problems=(died,))


def Harness(source: RecordedBench) -> ViewHarness:
    """The view as the wizard builds it: each series drawn against this GPU's published figure."""
    name = source.gpu.split("x ", 1)[-1]

    def reference(mode: str, gpus: int) -> ReferenceMark | None:
        return reference_for(load_references(), name, mode, gpus)

    return ViewHarness(
        BenchmarkView(source, ABOUT, reference), sub_title="SIMULATION: h100x8-ubuntu2204-fresh"
    )


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return tmp_path / "bench"


async def test_a_whole_run_charts_every_mode_then_judges_it(out: Path) -> None:
    source = whole_run(out, per_poll=7)
    app = Harness(source)
    async with app.run_test(size=(100, 32)) as pilot:
        screen = app.shell.view
        assert isinstance(screen, BenchmarkView)
        assert screen.state == "ready" and not source.started
        await pilot.press("enter")  # Enter begins (the one key map: Enter continues or runs)
        assert source.started
        while screen.state != "done":
            await pilot.pause(0.05)
        keys = list(screen.chart.series)
        assert keys == ["fp32", "tf32", "amp-fp16", "amp-bf16", "amp-bf16 x8"]
        marked = {mark.key: mark for mark in screen.marks}
        assert marked["amp-bf16 x8"].label.startswith("amp-bf16 x8: 2,763/GPU published")
        assert "fp32" not in marked, "no published strict-FP32 PyTorch figure for the H100"
        assert len(screen.results) == 5
        verdict = text_of(app, "#verdict")
        assert "At or above the best published PyTorch numbers" in verdict
        assert "DDP over 8 GPUs (amp-bf16): 7.86x one GPU" in verdict
        await pilot.press("enter")
    headline = app.answers[-1]
    assert isinstance(headline, Benchmarked) and headline.headline
    assert "At or above the best published PyTorch numbers" in headline.headline
    assert (out / "results.json").exists() and (out / "results.md").exists()


async def test_a_worker_that_backs_off_then_dies_says_so(out: Path) -> None:
    app = Harness(died_run(out))
    async with app.run_test(size=(100, 32)) as pilot:
        screen = app.shell.view
        await pilot.press("enter")
        while screen.state != "done":  # type: ignore[attr-defined]
            await pilot.pause(0.05)
        verdict = text_of(app, "#verdict")
        assert "killed by signal 9" in verdict
        assert "amp-fp16: batch 512 did not fit; backed off to 256" in verdict
        assert screen.results == []  # type: ignore[attr-defined]
        await pilot.press("r")
    assert app.answers == [Again()]


async def test_stop_keeps_what_ran(out: Path) -> None:
    source = whole_run(out, per_poll=3)
    app = Harness(source)
    async with app.run_test(size=(100, 32)) as pilot:
        screen = app.shell.view
        await pilot.press("enter")
        await pilot.pause(0.3)
        await pilot.press("x")
        while screen.state != "done":  # type: ignore[attr-defined]
            await pilot.pause(0.05)
        assert source.cancelled
        assert "Stopped." in text_of(app, "#status")
        assert "stopped before the end" in text_of(app, "#verdict")


async def test_skip_leaves_without_running(out: Path) -> None:
    source = whole_run(out)
    app = Harness(source)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("s")
    assert app.answers == [Benchmarked(None)] and not source.started


async def finish(pilot, source: RecordedBench) -> None:  # type: ignore[no-untyped-def]
    await pilot.press("enter")
    while pilot.app.shell.view.state != "done":
        await pilot.pause(0.05)


async def midway(pilot, source: RecordedBench) -> None:  # type: ignore[no-untyped-def]
    source.hold_at = 40  # held here for the picture: never a poll past it, however slow the test
    await pilot.press("enter")
    while source.given < 40:  # the view takes what a poll gives in the same call
        await pilot.pause(0.02)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", ["ready", "running", "finished", "died"])
def test_benchmark_screen_looks_right(
    snap_compare, tmp_path: Path, name: str, size: tuple[int, int]
) -> None:  # type: ignore[no-untyped-def]
    source = died_run(tmp_path) if name == "died" else whole_run(tmp_path, per_poll=4)
    before = {"ready": None, "running": midway, "finished": finish, "died": finish}[name]
    run_before = None if before is None else (lambda pilot: before(pilot, source))
    assert snap_compare(Harness(source), terminal_size=size, run_before=run_before)


async def test_run_again_starts_at_once(out: Path) -> None:
    """r answers Again; the view the wizard builds for the next attempt begins without its
    screen before (the person already asked for it)."""
    source = whole_run(out)
    app = ViewHarness(BenchmarkView(source, ABOUT, begin_at_once=True))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert source.started and app.shell.view.state in ("running", "done")  # type: ignore[attr-defined]
        assert ABOUT not in text_of(app, "#verdict")


async def test_the_notes_hold_no_phase_marker(out: Path) -> None:
    source = whole_run(out, per_poll=20)
    app = Harness(source)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter")
        while source.given < 30:
            await pilot.pause(0.02)
        screen = app.shell.view
        assert "── one GPU" not in text_of(app, "#verdict")
        assert all(not note.startswith("──") for note in screen.notes)  # type: ignore[attr-defined]


class HeldAfterStream(RecordedBench):
    """Gives its stream, then runs on (as a worker still in a mode) until it is stopped."""

    def running(self) -> bool:
        return self.started and not self.cancelled


async def test_stopped_before_any_compared_mode_says_it_stopped(out: Path) -> None:
    """Stopped during fp32 (the H100 has no published strict-FP32 figure), whenever the x lands
    in it: the headline is the stop, not "No published numbers for this GPU"."""
    events = events_of("h100x8-sim.jsonl")
    fp32 = events[: next(i for i, e in enumerate(events) if getattr(e, "mode", "fp32") != "fp32")]
    source = HeldAfterStream(["── one GPU", *fp32], "8x H100 SXM5 80GB", out, per_poll=5)
    app = Harness(source)
    async with app.run_test(size=(100, 32)) as pilot:
        screen = app.shell.view
        await pilot.press("enter")
        while not screen.chart.series:  # type: ignore[attr-defined]
            await pilot.pause(0.02)
        await pilot.press("x")
        while screen.state != "done":  # type: ignore[attr-defined]
            await pilot.pause(0.05)
        verdict = text_of(app, "#verdict")
    assert verdict.startswith("Stopped before the end: nothing that ran was compared")
    assert "No published numbers" not in verdict


async def test_the_chart_keeps_its_height_from_first_sample_to_verdict(out: Path) -> None:
    source = whole_run(out, per_poll=4)
    app = Harness(source)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.shell.view
        chart = screen.query_one("#chart")
        heights = {chart.size.height}
        await pilot.press("enter")
        while screen.state != "done":  # type: ignore[attr-defined]
            await pilot.pause(0.02)
            heights.add(chart.size.height)
        await pilot.pause(0.1)
        heights.add(chart.size.height)
    assert len(heights) == 1, f"the chart's height changed: {sorted(heights)}"
