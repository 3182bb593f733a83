"""``gpuwizard bench`` on a machine without a GPU: one process, then DDP over two processes on
gloo, so that the multi-process path really runs here and reports a scaling figure, labelled as
a CPU check and never compared with GPU numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuwizard.bench.launch import BenchJob, BenchSpec, Outcome
from gpuwizard.bench.protocol import AllReduce, Result, Sample, Started
from gpuwizard.bench.references import load_references
from gpuwizard.bench.results import collect, save
from gpuwizard.bench.verdict import judge

TINY = ("--model", "resnet18", "--image-size", "32", "--warmup", "1", "--steps", "4")


@pytest.fixture(scope="module")
def outcome(torch_python: str, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    spec = BenchSpec(python=(torch_python,), gpus=0, modes=("fp32",), batch_size=4, extra=TINY)
    job = BenchJob(spec, tmp_path_factory.mktemp("bench"))
    job.start()
    return job.wait(300)


@pytest.mark.slow
def test_two_ranks_take_part_on_gloo(outcome: Outcome) -> None:
    assert outcome.ok, outcome.problems
    started = [e for e in outcome.events if isinstance(e, Started)]
    assert [(s.world_size, s.backend, s.device) for s in started] == [
        (1, None, "cpu"),
        (2, "gloo", "cpu"),
    ]
    ddp = [e for e in outcome.events if isinstance(e, Result) and e.world_size == 2]
    assert len(ddp) == 1 and len(ddp[0].per_rank) == 2 and min(ddp[0].per_rank) > 0
    samples = [e for e in outcome.events if isinstance(e, Sample) and e.world_size == 2]
    assert samples and all(len(s.per_rank) == 2 for s in samples)
    (allreduce,) = [e for e in outcome.events if isinstance(e, AllReduce)]
    assert allreduce.world_size == 2 and allreduce.backend == "gloo"


@pytest.mark.slow
def test_the_scaling_figure_comes_from_both_runs_and_is_labelled_a_cpu_check(
    outcome: Outcome,
) -> None:
    collected = collect(outcome.events)
    verdict = judge(
        device="cpu",
        gpu_name="CPU",
        results=collected.results,
        references=load_references(),
        allreduce=collected.allreduce,
    )
    (single,) = [r for r in collected.results if r.world_size == 1]
    (ddp,) = [r for r in collected.results if r.world_size == 2]
    efficiency = ddp.images_per_s / (2 * single.images_per_s)
    (note,) = [n for n in verdict.notes if "DDP" in n]
    assert note.startswith("CPU check of the multi-process path: DDP over 2 processes on gloo")
    assert f"{efficiency:.1%} scaling" in note
    assert "rank 0" in note and "rank 1" in note
    assert "never compared with GPU numbers" in note
    assert verdict.comparisons == () and verdict.level == "unknown"
    assert any(n.startswith("all-reduce over 2 CPU processes (gloo): ") for n in verdict.notes)


def test_a_cpu_verdict_never_compares_ddp_with_gpu_references() -> None:
    single = Result("fp32", 1, 8, 100.0, 100.0, 80.0, 6, 0, (100.0,))
    ddp = Result("fp32", 2, 8, 150.0, 75.0, 106.0, 6, 0, (76.0, 75.0))
    verdict = judge(device="cpu", gpu_name="H100 SXM5 80GB", results=(single, ddp),
                    references=load_references())  # fmt: skip
    assert verdict.comparisons == () and verdict.causes == ()
    assert any(
        "75.0% scaling (img/s per process: rank 0 76.0, rank 1 75.0)" in n for n in verdict.notes
    )
    assert not any("public runs" in n for n in verdict.notes)


def test_results_json_keeps_each_ranks_figure(tmp_path: Path) -> None:
    ddp = Result("fp32", 2, 8, 150.0, 75.0, 106.0, 6, 0, (76.0, 75.0))
    verdict = judge(device="cpu", gpu_name="CPU", results=(ddp,), references=load_references())
    json_path, _ = save(tmp_path, [ddp], verdict, "CPU", [])
    assert json.loads(json_path.read_text())["results"][0]["per_rank"] == [76.0, 75.0]
