"""The benchmark chart: images/s per GPU over elapsed seconds, one line per mode and DDP, each
against the published figure for this GPU model and count (or one that says it is scaled), at
80x24 and 120x40 from a fixed series."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuwizard.bench import protocol as bp
from gpuwizard.bench.chart import ChartData, reference_for
from gpuwizard.bench.references import load_references
from gpuwizard.screens.widgets.throughput_chart import X_LABEL, Y_LABEL, tick_label, y_ticks
from tests.ui.test_benchmark import Harness, RecordedBench
from tests.ui.test_hostile_text import shown_text

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]
REFERENCES = load_references()


def started(world_size: int) -> bp.Started:
    return bp.Started(
        torch="2.14.1", torchvision="0.29.1", cuda="12.6", device="cuda", world_size=world_size,
        backend="nccl" if world_size > 1 else None, gpus=(), model="resnet50", image_size=224,
        modes=("amp-bf16",), python="3.12.3", compiled=False, channels_last=True,
    )  # fmt: skip


def sample(mode: bp.Mode, t: float, per_gpu: float, world_size: int = 1) -> bp.Sample:
    return bp.Sample(
        mode=mode, t=t, step=int(t), batch_size=256, world_size=world_size,
        images_per_s=per_gpu * world_size, step_ms=100.0, per_rank=(per_gpu,) * world_size,
        memory_mib=(50000,) * world_size,
    )  # fmt: skip


def result(mode: bp.Mode, per_gpu: float, world_size: int = 1) -> bp.Result:
    return bp.Result(
        mode=mode, world_size=world_size, batch_size=256, images_per_s=per_gpu * world_size,
        per_gpu=per_gpu, step_ms=100.0, samples=5, memory_mib=50000,
    )  # fmt: skip


def fixed_series(gpus: int) -> list[bp.BenchEvent | str]:
    """Four modes on one GPU, 6 s each with a slow first sample, then DDP on every GPU."""
    events: list[bp.BenchEvent | str] = [started(1)]
    t = 0.0
    for mode, rate in (
        ("fp32", 560.0),
        ("tf32", 1150.0),
        ("amp-fp16", 1420.0),
        ("amp-bf16", 1450.0),
    ):
        for i in range(6):
            t += 1.0
            events.append(sample(mode, t, rate * (0.8 if i == 0 else 1.0 + 0.01 * (i % 3))))  # type: ignore[arg-type]
        events.append(result(mode, rate))  # type: ignore[arg-type]
    events.append(started(gpus))
    for i in range(8):
        events.append(sample("amp-bf16", 2.0 + i, 1380.0 + 5 * (i % 2), gpus))
    events.append(result("amp-bf16", 1380.0, gpus))
    return events


def test_an_exact_figure_is_used_where_one_was_published_for_this_count() -> None:
    mark = reference_for(REFERENCES, "H100 SXM5 80GB", "amp-bf16", 8)
    assert mark is not None and not mark.scaled
    assert mark.per_gpu == pytest.approx(22101 / 8)
    assert "8 GPUs" in mark.label


def test_a_count_without_a_figure_gets_a_scaled_one_that_says_how() -> None:
    mark = reference_for(REFERENCES, "A100 PCIe 40GB", "amp-bf16", 4)
    assert mark is not None and mark.scaled
    assert "scaled from 1 GPU to 4 GPUs at the same images/s per GPU" in mark.label
    assert "no published 4 GPUs figure" in mark.label


def test_no_figure_for_another_gpu_model() -> None:
    assert reference_for(REFERENCES, "Tesla T4", "amp-fp16", 1) is None


def test_each_worker_continues_the_elapsed_time_axis() -> None:
    data = ChartData()
    for event in fixed_series(4):
        data.take(event)
    assert list(data.series) == ["fp32", "tf32", "amp-fp16", "amp-bf16", "amp-bf16 x4"]
    ddp = data.series["amp-bf16 x4"]
    assert ddp[0][0] == pytest.approx(24.0 + 2.0), (
        "the DDP worker's clock starts where one GPU's ended"
    )
    assert ddp[0][1] == pytest.approx(1380.0), "per GPU"


def chart_source(tmp_path: Path, gpu: str, gpus: int) -> RecordedBench:
    return RecordedBench(fixed_series(gpus), f"{gpus}x {gpu}", tmp_path)


async def test_the_chart_labels_its_axes_and_says_what_the_dotted_lines_are(tmp_path: Path) -> None:
    source = chart_source(tmp_path, "A100 PCIe 40GB", 4)
    app = Harness(source)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter")
        while app.shell.view.state != "done":  # type: ignore[attr-defined]
            await pilot.pause(0.05)
        text = shown_text(app.export_screenshot())
        caption = str(app.shell.view.query_one("#caption").render())  # type: ignore[union-attr]
    assert Y_LABEL in text and X_LABEL in text
    legend, note = caption.splitlines()
    assert legend.startswith("━ fp32  ━ tf32  ━ amp-fp16  ━ amp-bf16  ━ amp-bf16 x4  ···")
    assert legend.endswith("··· published figure") and len(legend) <= 78, "one line at 80 columns"
    assert note == "*amp-bf16 x4: the 1 GPU figure at 4 (none published for 4)"


async def test_the_y_axis_reads_in_round_images_per_second(tmp_path: Path) -> None:
    """0, 500, 1,000, 1,500 img/s: never 1615.4 or 3284.2."""
    source = chart_source(tmp_path, "A100 PCIe 40GB", 4)
    app = Harness(source)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter")
        while app.shell.view.state != "done":  # type: ignore[attr-defined]
            await pilot.pause(0.05)
        rows = shown_text(app.export_screenshot()).splitlines()
    labels = [row.split("┤")[0].strip() for row in rows if "┤" in row]
    assert labels and all(re.fullmatch(r"\d{1,3}(,\d{3})*", label) for label in labels), labels
    assert labels[-1] == "0" and len(set(labels)) == len(labels)


def test_round_ticks() -> None:
    assert y_ticks(3612.6) == [0, 1000, 2000, 3000]
    assert y_ticks(1598.0) == [0, 500, 1000, 1500]
    assert y_ticks(57.0) == [0, 20, 40]
    assert [tick_label(v) for v in y_ticks(26_000)] == ["0", "10,000", "20,000"]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("gpu", ["H100 SXM5 80GB", "A100 PCIe 40GB"])
def test_the_chart_looks_right(snap_compare, tmp_path: Path, gpu: str, size) -> None:  # type: ignore[no-untyped-def]
    source = chart_source(tmp_path, gpu, 8 if gpu.startswith("H100") else 4)

    async def charted(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.press("enter")
        while source.given < len(source.stream):
            await pilot.pause(0.02)
        source.per_poll = 0
        await pilot.pause(0.1)

    assert snap_compare(Harness(source), terminal_size=size, run_before=charted)
