"""Running the worker: the commands for each phase, following the stream, a worker that dies or
speaks nonsense, stopping, and the files a run leaves."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gpuwizard.bench import protocol as bp
from gpuwizard.bench.launch import WORKER, BenchJob, BenchSpec, fitted_args, phases, results_dir
from gpuwizard.bench.results import save

STREAMS = Path(__file__).with_name("streams")

FAKE_PYTHON = textwrap.dedent(
    """
    import os, signal, sys, time
    lines = open(os.environ["FAKE_STREAM"]).read().splitlines()
    die_after = int(os.environ.get("FAKE_DIE_AFTER", "-1"))
    for number, line in enumerate(lines):
        if number == die_after:
            sys.stderr.write("RuntimeError: CUDA error: an illegal memory access was encountered\\n")
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        print(line, flush=True)
        time.sleep(float(os.environ.get("FAKE_PACE", "0")))
    sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
    """
)


@pytest.fixture
def fake_python(tmp_path: Path) -> tuple[str, ...]:
    script = tmp_path / "fake_python.py"
    script.write_text(FAKE_PYTHON)
    return (sys.executable, str(script))


def test_one_gpu_runs_every_mode_and_ddp_runs_the_best_amp_mode_with_all_reduce() -> None:
    spec = BenchSpec(
        python=("/env/bin/python",), gpus=8, dataload_dir="/data", allreduce_max_mib=4096
    )
    single, ddp = phases(spec)
    assert single.argv == (
        "/env/bin/python", str(WORKER), "--modes", "fp32,tf32,amp-fp16,amp-bf16",
        "--device", "cuda", "--dataload", "/data",
    )  # fmt: skip
    assert ddp.argv == (
        "/env/bin/python", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=8",
        str(WORKER), "--modes", "amp-bf16", "--allreduce", "--allreduce-max-mib", "4096",
        "--device", "cuda",
    )  # fmt: skip


def test_one_gpu_has_no_ddp_phase() -> None:
    assert [p.name for p in phases(BenchSpec(python=("py",), gpus=1))] == ["one GPU"]


def test_the_cpu_runs_ddp_on_two_processes_with_the_threads_of_the_single_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    spec = BenchSpec(python=("py",), gpus=0, modes=("fp32", "amp-bf16"), batch_size=8)
    single, ddp = phases(spec, cpus=8)
    assert single.argv[-4:] == ("--batch-size", "8", "--device", "cpu")
    assert ddp.argv == (
        "py", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", str(WORKER),
        "--modes", "fp32", "--allreduce", "--allreduce-max-mib", "8", "--batch-size", "8",
        "--device", "cpu",
    )  # fmt: skip
    assert single.env == ddp.env == (("OMP_NUM_THREADS", "4"),)
    assert "check" in ddp.name and "gloo" in ddp.name


def test_the_cpu_without_ddp_runs_one_process() -> None:
    (cpu,) = phases(BenchSpec(python=("py",), gpus=0, modes=("fp32",), ddp=False))
    assert cpu.name == "CPU" and cpu.env == ()


def test_the_stream_is_followed_kept_and_parsed(tmp_path: Path, fake_python: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("FAKE_STREAM", str(STREAMS / "h100x8-sim.jsonl"))
    job = BenchJob(BenchSpec(python=fake_python, gpus=1), tmp_path / "run")
    job.start()
    outcome = job.wait(30)
    assert outcome.ok, outcome.problems
    kinds = [type(e).__name__ for e in outcome.events]
    assert kinds[0] == "Started" and kinds.count("Result") == 5
    kept = (tmp_path / "run" / "stream.jsonl").read_text().splitlines()
    assert kept == (STREAMS / "h100x8-sim.jsonl").read_text().splitlines()
    polled = job.poll()
    assert polled[0] == "── one GPU"
    assert sum(isinstance(item, bp.Sample) for item in polled) == kinds.count("Sample")


def test_a_worker_that_dies_mid_run_is_one_clear_problem_and_what_it_said_stays(
    tmp_path: Path, fake_python: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_STREAM", str(STREAMS / "h100x8-sim.jsonl"))
    monkeypatch.setenv("FAKE_DIE_AFTER", "30")
    job = BenchJob(BenchSpec(python=fake_python, gpus=1), tmp_path / "run")
    job.start()
    outcome = job.wait(30)
    assert not outcome.ok
    assert len(outcome.events) == 30
    (problem,) = outcome.problems
    assert problem.startswith("one GPU: the worker was killed by signal 9 before finishing: ")
    assert "an illegal memory access" in problem


def test_an_unusable_environment_skips_the_ddp_phase(tmp_path: Path, fake_python: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    monkeypatch.setenv("FAKE_STREAM", str(empty))
    monkeypatch.setenv("FAKE_EXIT", "2")
    job = BenchJob(BenchSpec(python=fake_python, gpus=4), tmp_path / "run")
    job.start()
    outcome = job.wait(30)
    assert len(outcome.problems) == 1 and outcome.problems[0].startswith(
        "one GPU: the worker exited 2"
    )


def test_lines_of_another_schema_are_reported_not_trusted(tmp_path: Path, fake_python: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    stream = tmp_path / "odd.jsonl"
    stream.write_text(
        "\n".join([json.dumps({"v": 99, "kind": "finished", "ok": True, "seconds": 1.0}), "Traceback (most recent call last):"])
    )  # fmt: skip
    monkeypatch.setenv("FAKE_STREAM", str(stream))
    job = BenchJob(BenchSpec(python=fake_python, gpus=1), tmp_path / "run")
    job.start()
    outcome = job.wait(30)
    assert outcome.events == []
    assert "schema 99 is not 1" in outcome.problems[0]
    assert "not JSON: 'Traceback" in outcome.problems[1]


def test_stopping_ends_the_worker_at_once_and_keeps_what_arrived(tmp_path: Path, fake_python: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("FAKE_STREAM", str(STREAMS / "h100x8-sim.jsonl"))
    monkeypatch.setenv("FAKE_PACE", "0.05")
    job = BenchJob(BenchSpec(python=fake_python, gpus=8), tmp_path / "run")
    job.start()
    deadline = time.monotonic() + 10
    while len(job.outcome.events) < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
    started = time.monotonic()
    job.cancel()
    outcome = job.wait(10)
    assert not job.running() and time.monotonic() - started < 5
    assert outcome.cancelled and not outcome.ok
    assert 5 <= len(outcome.events) < 86
    assert outcome.problems == []  # a stop is not a failure to explain


def test_a_run_s_folder_and_files_are_the_owner_s_alone_whatever_the_umask(
    tmp_path: Path, fake_python: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After `umask 000`, bench/<stamp> was 0777 and its files 0666 (issue 28); the README
    promises the state folder's modes: 0700 and 0600."""
    monkeypatch.setenv("FAKE_STREAM", str(STREAMS / "h100x8-sim.jsonl"))
    state = tmp_path / "state"
    run = results_dir(state, now=0)
    old = os.umask(0)
    try:
        job = BenchJob(BenchSpec(python=fake_python, gpus=1), run)
        job.start()
        outcome = job.wait(30)
        save(run, outcome.events, judge_outcome(outcome), "8x H100 SXM5 80GB", outcome.problems)
    finally:
        os.umask(old)
    for folder in (state, state / "bench", run):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    files = sorted(run.iterdir())
    assert [f.name for f in files] == ["results.json", "results.md", "stream.jsonl", "worker.log"]
    for file in files:
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file.name


def judge_outcome(outcome):  # type: ignore[no-untyped-def]
    from gpuwizard.bench.references import load_references
    from gpuwizard.bench.results import collect
    from gpuwizard.bench.verdict import judge

    results = collect(outcome.events).results
    return judge(
        device="cuda", gpu_name="H100 SXM5 80GB", results=results, references=load_references()
    )


def test_a_run_stopped_before_any_compared_mode_says_it_stopped_first(tmp_path: Path, fake_python: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Stopped during fp32 (no published figure for the H100): the headline is the stop, not
    "No published numbers for this GPU" (there are some; the run never reached them)."""
    from gpuwizard.bench.session import BenchSession
    from tests.conftest import facts_of

    monkeypatch.setenv("FAKE_STREAM", str(STREAMS / "h100x8-sim.jsonl"))
    monkeypatch.setenv("FAKE_PACE", "0.05")
    facts = facts_of("h100x8-ubuntu2204-fresh")
    session = BenchSession(BenchSpec(python=fake_python, gpus=8), tmp_path, facts)
    session.start()
    deadline = time.monotonic() + 10
    while len(session.job.outcome.events) < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
    session.cancel()
    summary = session.finish()
    assert summary.cancelled
    assert summary.verdict.headline.startswith("Stopped before the end: nothing that ran was")
    assert "Stopped before the end" in summary.results_md.read_text()


# ---------------------------------------------------------------- the one-GPU batch, reused (issue 27 §3)


def one_gpu_result(mode: bp.Mode, batch: int, world_size: int = 1) -> bp.Result:
    return bp.Result(
        mode=mode, world_size=world_size, batch_size=batch, images_per_s=1.0, per_gpu=1.0,
        step_ms=1.0, samples=5, memory_mib=1,
    )  # fmt: skip


def test_the_ddp_run_starts_its_batch_search_at_the_one_gpu_runs_batch_of_its_mode() -> None:
    single, ddp = phases(BenchSpec(python=("py",), gpus=8))
    assert (single.reuses, ddp.reuses) == (None, "amp-bf16")
    events = [one_gpu_result("amp-fp16", 512), one_gpu_result("amp-bf16", 256)]
    assert fitted_args(single, events) == ()
    assert fitted_args(ddp, events) == ("--batch-fitted", "amp-bf16=256")


def test_nothing_is_reused_without_a_one_gpu_result_or_when_the_batch_was_given() -> None:
    _, ddp = phases(BenchSpec(python=("py",), gpus=8))
    assert fitted_args(ddp, [one_gpu_result("amp-fp16", 512)]) == ()  # amp-bf16 did not run
    assert fitted_args(ddp, [one_gpu_result("amp-bf16", 256, world_size=8)]) == ()
    _, given = phases(BenchSpec(python=("py",), gpus=8, batch_size=128))
    assert given.reuses is None and fitted_args(given, [one_gpu_result("amp-bf16", 256)]) == ()


def test_the_cpu_ddp_check_reuses_its_mode_too() -> None:
    _, ddp = phases(BenchSpec(python=("py",), gpus=0, modes=("fp32", "amp-bf16")), cpus=2)
    assert fitted_args(ddp, [one_gpu_result("fp32", 8)]) == ("--batch-fitted", "fp32=8")
