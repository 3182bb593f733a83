"""The comparison with published numbers, and the likely causes of a low result."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwizard.bench.protocol import (
    AllReduce,
    AllReduceSize,
    DataLoad,
    OutOfMemory,
    Result,
    parse_line,
)
from gpuwizard.bench.references import load_references, mode_class
from gpuwizard.bench.results import collect, published_lines, results_markdown
from gpuwizard.bench.verdict import compare, judge, level_of, observe, observed_causes, stopped
from gpuwizard.core.facts import NvmlGpu, NvmlOk

REFS = load_references()
STREAMS = Path(__file__).with_name("streams")


def result(
    mode: str = "amp-bf16", per_gpu: float = 2600.0, world: int = 1, batch: int = 256
) -> Result:
    return Result(mode, world, batch, per_gpu * world, per_gpu, 98.0, 10, 30000)  # type: ignore[arg-type]


def test_every_reference_row_cites_a_declared_source() -> None:
    assert REFS.train and REFS.allreduce
    assert {r.source for r in REFS.train} <= set(REFS.sources)


def test_amp_modes_compare_with_published_amp_numbers() -> None:
    assert mode_class("amp-fp16") == mode_class("amp-bf16") == "amp"
    assert mode_class("fp32") == "fp32"


def test_the_bar_is_the_best_published_pytorch_number_not_mlperf() -> None:
    comparison = compare(result(per_gpu=2730.0), "A100 SXM4 40GB", REFS)
    assert comparison.bar is not None
    assert (comparison.bar.kind, comparison.bar.per_gpu) == ("pytorch", 2600)  # timm, bs512
    assert comparison.ratio == pytest.approx(1.05)
    assert comparison.level == "good"
    assert any("MLPerf" in line for line in comparison.references)  # shown, not the bar


def test_ddp_is_held_to_the_one_gpu_bar_per_gpu() -> None:
    """Lambda's 4-GPU NCHW number is far weaker than one tuned GPU: the higher bar applies."""
    comparison = compare(result(per_gpu=1600.0, world=4), "A100 SXM4 80GB", REFS)
    assert comparison.bar is not None and comparison.bar.per_gpu == 2600
    assert comparison.level == "low"


def test_a_gpu_without_references_is_judged_on_its_own() -> None:
    comparison = compare(result(), "Tesla T4", REFS)
    assert (comparison.bar, comparison.ratio, comparison.level) == (None, None, "unknown")
    assert "no published PyTorch number" in comparison.line


@pytest.mark.parametrize(
    ("ratio", "level"), [(1.2, "good"), (0.95, "good"), (0.8, "fair"), (0.6, "low"), (0.3, "poor"), (None, "unknown")]
)  # fmt: skip
def test_levels(ratio: float | None, level: str) -> None:
    assert level_of(ratio) == level


def test_scaling_and_the_all_reduce_peak_are_judged() -> None:
    sizes = tuple(
        AllReduceSize(2**p, 1.0, bw / 1.75, bw) for p, bw in ((20, 40.0), (25, 190.0), (32, 300.0))
    )
    verdict = judge(
        device="cuda",
        gpu_name="H100 SXM5 80GB",
        results=[result(per_gpu=3000.0), result(per_gpu=2700.0, world=8)],
        references=REFS,
        allreduce=AllReduce(8, "nccl", sizes),
        nvswitch=True,
    )
    scaling, allreduce = verdict.notes
    assert "7.20x one GPU (90.0% scaling" in scaling
    assert "peak bus bandwidth 300.0 GB/s at 4,096 MiB" in allreduce
    assert "published 480 GB/s for 8 GPUs: 0.62x" in allreduce
    assert verdict.level == "low"
    assert verdict.headline.endswith("but multi-GPU is lower than it should be (below)")


def test_an_all_reduce_that_stopped_short_of_the_peak_sizes_is_not_judged() -> None:
    sizes = (AllReduceSize(256 * 2**20, 1.0, 200.0, 350.0),)
    verdict = judge(
        device="cuda", gpu_name="H100 SXM5 80GB", results=[result(per_gpu=3000.0)],
        references=REFS, allreduce=AllReduce(8, "nccl", sizes), nvswitch=True,
    )  # fmt: skip
    assert verdict.level == "good"
    assert "this test stopped at 256 MiB" in verdict.notes[0]


def gpu(
    index: int, gen: int = 5, limits: tuple[str, ...] = (), persistence: bool = True
) -> NvmlGpu:
    return NvmlGpu(
        index, f"0000:{index:02x}:00.0", "NVIDIA H100", 81559, gen, 5, 16, 16, persistence, limits
    )


def test_what_nvml_saw_under_load_becomes_likely_causes() -> None:
    samples = [
        NvmlOk("580.95.05", "13.0", (gpu(0, gen=1), gpu(1, gen=4, limits=("thermal (hardware)",))), ("0-1",)),
        NvmlOk("580.95.05", "13.0", (gpu(0, gen=5), gpu(1, gen=4, limits=("thermal (hardware)",), persistence=False)), ("0-1",)),
    ]  # fmt: skip
    observed = observe(samples)
    assert observed.pcie_below_max == (
        "GPU 1 ran at PCIe Gen4 x16; it can do Gen5 x16",
    )  # GPU 0 trained up
    assert observed.clock_limits == ("GPU 1: thermal (hardware)",)
    assert observed.persistence_off == (1,)
    causes = observed_causes(observed)
    assert any("check the slot, riser and BIOS" in c for c in causes)
    assert any("check cooling and power delivery" in c for c in causes)
    assert any("nvidia-persistenced" in c for c in causes)
    assert any("no peer-to-peer between GPUs 0-1" in c for c in causes)


def test_a_power_cap_seen_in_a_few_samples_is_not_a_cause() -> None:
    samples = [
        NvmlOk("580", "13.0", (gpu(0, limits=("power cap",) if i == 0 else ()),)) for i in range(10)
    ]
    assert observe(samples).clock_limits == ()


def test_slow_data_loading_and_oom_backoff_are_explained() -> None:
    verdict = judge(
        device="cuda",
        gpu_name="A100 SXM4 40GB",
        results=[result(per_gpu=2700.0)],
        references=REFS,
        dataload=DataLoad("/data", 310.0, 1200.0, 8, True, 256, 224),
        ooms=[OutOfMemory("amp-bf16", 512, 384), OutOfMemory("amp-bf16", 384, 256)],
    )
    text = "\n".join(verdict.causes)
    assert "the dataset disk reads 310 MB/s" in text
    assert "the DataLoader delivers 1,200 img/s, fewer than the GPUs train (2,700 img/s)" in text
    assert "amp-bf16: batch 512 did not fit; backed off to 256" in text


def test_a_cpu_run_is_labelled_and_never_compared() -> None:
    verdict = judge(device="cpu", gpu_name="CPU", results=[result(per_gpu=14.0)], references=REFS)
    assert verdict.headline.startswith("CPU run")
    assert verdict.comparisons == ()
    assert "(CPU)" in verdict.notes[0]


def test_the_markdown_report_from_a_recorded_stream() -> None:
    events = [parse_line(line) for line in (STREAMS / "h100x8-sim.jsonl").read_text().splitlines()]
    collected = collect(events)
    verdict = judge(
        device=collected.device, gpu_name="H100 SXM5 80GB", results=collected.results,
        references=REFS, allreduce=collected.allreduce, dataload=collected.dataload, nvswitch=True,
    )  # fmt: skip
    text = results_markdown(collected, verdict, "8x H100 SXM5 80GB", [], 0.0)
    assert "| amp-bf16 | 8 | 256 | 23,282 | 2,910 | 1.04x |" in text
    assert text.count("## Published numbers") == 1
    lines = published_lines(verdict)
    assert len(lines) == len(set(lines))  # each reference once, not once per result


def test_a_stopped_verdict_says_so_first_and_keeps_what_ran() -> None:
    ran = judge(
        device="cuda",
        gpu_name="H100 SXM5 80GB",
        results=[result("amp-bf16", 2900.0)],
        references=REFS,
    )
    assert (
        stopped(ran).headline
        == f"Stopped before the end. So far: {ran.headline[0].lower()}{ran.headline[1:]}"
    )
    assert stopped(ran).comparisons == ran.comparisons
    nothing = judge(
        device="cuda", gpu_name="H100 SXM5 80GB", results=[result("fp32", 560.0)], references=REFS
    )
    assert nothing.headline.startswith("No published numbers")
    assert stopped(nothing).headline.startswith(
        "Stopped before the end: nothing that ran was compared"
    )


def test_a_run_cut_off_before_its_results_is_found_and_a_finished_one_is_not(
    tmp_path: Path,
) -> None:
    """Issue 31 (3): the newest run folder with a stream and no results.json was interrupted
    (its terminal closed); a torn last line is not taken for a result."""
    from gpuwizard.bench.results import last_interrupted

    assert last_interrupted(tmp_path) is None, "no benchmark ever ran here"
    older, newest = tmp_path / "bench" / "20261204-100000", tmp_path / "bench" / "20261204-223100"
    for folder in (older, newest):
        folder.mkdir(parents=True)
    (older / "stream.jsonl").write_text("")
    (newest / "stream.jsonl").write_text(
        '{"v":1,"kind":"result","mode":"tf32","world_size":1,"batch_size":128,'
        '"images_per_s":1234.0,"per_gpu":1234.0,"step_ms":100.0,"samples":30,"memory_mib":1}\n{"v":1,"ki'
    )
    found = last_interrupted(tmp_path)
    assert found is not None and found.folder == newest and len(found.results) == 1
    assert (
        "started 2026-12-04 22:31" in found.sentence()
        and "tf32 on 1 GPU 1,234 img/s" in found.sentence()
    )
    (newest / "results.json").write_text("{}")
    assert last_interrupted(tmp_path) is None, "the newest run finished: nothing was cut off"
