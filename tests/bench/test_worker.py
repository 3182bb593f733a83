"""The benchmark worker, run as the target environment runs it: a subprocess whose every stdout
line must parse as a protocol event. Small sizes keep each run to seconds on two CPU cores."""

from __future__ import annotations

import ast
import functools
import importlib.util
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TypeVar

import pytest

from gpuwizard.bench import protocol
from gpuwizard.bench.protocol import (
    AllReduce,
    BenchEvent,
    DataLoad,
    Error,
    Finished,
    OutOfMemory,
    Result,
    Sample,
    Skipped,
    Started,
    Warmup,
    parse_line,
)

WORKER = Path(protocol.__file__).with_name("gpu_worker.py")
TINY = [
    *("--model", "resnet18", "--image-size", "32", "--batch-size", "4"),
    *("--warmup", "1", "--steps", "4", "--sample-every", "2"),
]
E = TypeVar("E")


@dataclass(frozen=True)
class WorkerRun:
    returncode: int
    events: list[BenchEvent]
    stderr: str

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]


def run_worker(argv: list[str], cwd: Path, timeout_s: float = 100) -> WorkerRun:
    """Run the worker; every stdout line must parse, or parse_line raises and the test fails."""
    done = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    return WorkerRun(
        done.returncode, [parse_line(line) for line in done.stdout.splitlines()], done.stderr
    )


@functools.cache
def load_worker() -> ModuleType:
    """The worker as a plain file, the way the target environment sees it (not as gpuwizard's)."""
    spec = importlib.util.spec_from_file_location("gpu_worker_under_test", WORKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def assert_stream_order(events: list[BenchEvent]) -> None:
    """started first and once, finished last and once, every result after its mode's samples."""
    assert isinstance(events[0], Started) and isinstance(events[-1], Finished)
    assert sum(isinstance(e, (Started, Finished)) for e in events) == 2
    for index, result in enumerate(events):
        if isinstance(result, Result):
            samples = [
                i for i, e in enumerate(events) if isinstance(e, Sample) and e.mode == result.mode
            ]
            assert samples and max(samples) < index, (
                f"{result.mode}: samples must precede the result"
            )


# ---------------------------------------------------------------- one process on the CPU


@pytest.fixture(scope="module")
def cpu_run(torch_python: str, tmp_path_factory: pytest.TempPathFactory) -> WorkerRun:
    modes = "fp32,tf32,amp-fp16,amp-bf16"
    argv = [torch_python, str(WORKER), "--device", "cpu", "--modes", modes, *TINY]
    return run_worker(argv, tmp_path_factory.mktemp("cpu"))


@pytest.mark.slow
def test_cpu_run_measures_fp32_and_bf16_and_finishes_ok(cpu_run: WorkerRun) -> None:
    assert cpu_run.returncode == 0, cpu_run.stderr
    (started,) = cpu_run.of(Started)
    assert started.device == "cpu" and started.gpus == ()
    assert started.world_size == 1 and started.backend is None
    assert started.modes == ("fp32", "tf32", "amp-fp16", "amp-bf16")
    assert started.model == "resnet18" and started.image_size == 32
    assert started.channels_last and not started.compiled
    results = {r.mode: r for r in cpu_run.of(Result)}
    assert set(results) == {"fp32", "amp-bf16"}
    for result in results.values():
        assert result.images_per_s > 0 and result.samples == 2 and result.batch_size == 4
        assert result.per_gpu == result.images_per_s and result.memory_mib == 0
    (finished,) = cpu_run.of(Finished)
    assert finished.ok and finished.seconds > 0


@pytest.mark.slow
def test_cpu_run_skips_the_gpu_only_modes_with_reasons(cpu_run: WorkerRun) -> None:
    skipped = {s.mode: s.reason for s in cpu_run.of(Skipped)}
    assert set(skipped) == {"tf32", "amp-fp16"}
    assert "CPU" in skipped["tf32"] and "amp-bf16" in skipped["amp-fp16"]
    assert not cpu_run.of(Error)


@pytest.mark.slow
def test_cpu_run_keeps_the_stream_order(cpu_run: WorkerRun) -> None:
    assert_stream_order(cpu_run.events)
    warmups = [(w.mode, w.step, w.steps) for w in cpu_run.of(Warmup)]
    assert warmups == [("fp32", 1, 1), ("amp-bf16", 1, 1)]
    samples = [s for s in cpu_run.of(Sample) if s.mode == "fp32"]
    assert [s.step for s in samples] == [2, 4]
    assert all(s.per_rank == (s.images_per_s,) and s.memory_mib == (0,) for s in samples)


# ---------------------------------------------------------------- two processes under torchrun


@pytest.fixture(scope="module")
def ddp_run(torch_python: str, tmp_path_factory: pytest.TempPathFactory) -> WorkerRun:
    torchrun = [torch_python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    options = ["--device", "cpu", "--modes", "fp32", "--allreduce", "--allreduce-max-mib", "4"]
    argv = [*torchrun, str(WORKER), *options, *TINY]
    return run_worker(argv, tmp_path_factory.mktemp("ddp"))


@pytest.mark.slow
def test_ddp_on_gloo_reports_both_ranks_through_rank_zero(ddp_run: WorkerRun) -> None:
    assert ddp_run.returncode == 0, ddp_run.stderr
    assert_stream_order(ddp_run.events)  # also: one started line, so rank 1 wrote nothing
    (started,) = ddp_run.of(Started)
    assert (started.world_size, started.backend) == (2, "gloo")
    (result,) = ddp_run.of(Result)
    assert result.world_size == 2 and result.per_gpu == pytest.approx(result.images_per_s / 2)
    for sample in ddp_run.of(Sample):
        assert len(sample.per_rank) == 2 and len(sample.memory_mib) == 2
        assert sample.images_per_s <= sum(sample.per_rank) * 1.0001  # paced by the slowest rank


@pytest.mark.slow
def test_allreduce_doubles_sizes_and_reports_bus_bandwidth(ddp_run: WorkerRun) -> None:
    (allreduce,) = ddp_run.of(AllReduce)
    assert (allreduce.world_size, allreduce.backend) == (2, "gloo")
    assert [s.bytes for s in allreduce.sizes] == [2**20, 2**21, 2**22]
    for size in allreduce.sizes:
        assert size.time_us > 0 and size.algbw_gbs > 0
        assert size.algbw_gbs == pytest.approx(size.bytes / size.time_us / 1e3)
        assert size.busbw_gbs == pytest.approx(size.algbw_gbs)  # 2(n-1)/n is 1 for n = 2


# ---------------------------------------------------------------- data loading, environment


@pytest.mark.slow
def test_dataload_measures_disk_and_loader_and_removes_its_scratch_files(
    torch_python: str, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    options = ["--device", "cpu", "--no-train", "--dataload-mib", "8", "--image-size", "32"]
    run = run_worker([torch_python, str(WORKER), *options, "--dataload", str(data)], tmp_path)
    assert run.returncode == 0, run.stderr
    (dataload,) = run.of(DataLoad)
    assert dataload.path == str(data)
    assert dataload.disk_read_mb_s > 0 and dataload.loader_images_per_s > 0
    assert not dataload.pin_memory and dataload.workers >= 1 and dataload.image_size == 32
    assert list(data.iterdir()) == []


@pytest.mark.slow
def test_asking_for_cuda_without_a_gpu_is_an_environment_error(
    torch_python: str, tmp_path: Path
) -> None:
    run = run_worker([torch_python, str(WORKER), "--device", "cuda", "--no-train"], tmp_path)
    if run.of(Started):
        pytest.skip("this machine has CUDA")
    assert run.returncode == 2
    (error,) = run.of(Error)
    assert error.error == "environment" and error.mode is None
    assert error.message.startswith(
        "--device cuda was asked for, but torch.cuda.is_available() is False: torch "
    )
    (finished,) = run.of(Finished)
    assert not finished.ok and run.events[-1] == finished


needs_torchless_python = pytest.mark.skipif(
    importlib.util.find_spec("torch") is not None,
    reason="this Python has torch; the case needs one without",
)


@needs_torchless_python
def test_help_works_without_torch(tmp_path: Path) -> None:
    argv = [sys.executable, str(WORKER), "--help"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "--allreduce-max-mib" in done.stdout and "--dataload" in done.stdout


@needs_torchless_python
def test_without_torch_the_worker_says_so_and_exits_2(tmp_path: Path) -> None:
    run = run_worker([sys.executable, str(WORKER), "--modes", "fp32"], tmp_path, timeout_s=30)
    assert run.returncode == 2
    error, finished = run.events
    assert isinstance(error, Error) and error.error == "environment" and "torch" in error.message
    assert isinstance(finished, Finished) and not finished.ok


# ---------------------------------------------------------------- batch-size back-off, without a GPU


class FakeOutOfMemory(Exception):
    """Stands in for torch.cuda.OutOfMemoryError."""


def search(
    candidates: list[int], fits_up_to: int, other_rank_fits_up_to: int | None = None
) -> tuple[int | None, list[OutOfMemory], list[str]]:
    """Run the worker's search with a fake step that fails above ``fits_up_to``."""
    worker = load_worker()
    calls: list[str] = []
    ooms: list[OutOfMemory] = []
    current: list[int] = []

    def try_step(batch: int) -> None:
        calls.append(f"try {batch}")
        current.append(batch)
        if batch > fits_up_to:
            raise FakeOutOfMemory

    def agree(fits: bool) -> bool:
        limit = other_rank_fits_up_to
        return fits and (limit is None or current[-1] <= limit)

    chosen = worker.search_batch_size(
        candidates,
        try_step=try_step,
        oom_error=FakeOutOfMemory,
        agree=agree,
        release=lambda: calls.append("release"),
        on_oom=lambda batch, smaller: ooms.append(
            OutOfMemory(mode="fp32", batch_size=batch, next=smaller)
        ),
    )
    return chosen, ooms, calls


def test_search_backs_off_to_the_largest_batch_that_fits() -> None:
    chosen, ooms, calls = search([256, 128, 64, 32, 16], fits_up_to=40)
    assert chosen == 32
    assert [(o.batch_size, o.next) for o in ooms] == [(256, 128), (128, 64), (64, 32)]
    assert calls[::2] == ["try 256", "try 128", "try 64", "try 32"]
    assert calls[1::2] == ["release"] * 4  # after every trial, failed or not


def test_search_reports_next_none_when_nothing_fits() -> None:
    chosen, ooms, _ = search([512], fits_up_to=40)
    assert chosen is None
    assert [(o.batch_size, o.next) for o in ooms] == [(512, None)]


def test_search_follows_the_rank_with_the_least_memory() -> None:
    chosen, ooms, _ = search([64, 32, 16], fits_up_to=64, other_rank_fits_up_to=16)
    assert chosen == 16
    assert [(o.batch_size, o.next) for o in ooms] == [(64, 32), (32, 16)]


@pytest.mark.parametrize(
    ("requested", "mode", "memory_mib", "image_size", "expected_first"),
    [
        pytest.param(None, "amp-bf16", 40960, 224, 256, id="40 GiB AMP: 256"),
        pytest.param(None, "fp32", 40960, 224, 128, id="40 GiB FP32: 128"),
        pytest.param(None, "amp-fp16", 143771, 224, 512, id="H200 AMP: 512"),
        pytest.param(None, "tf32", 16384, 224, 32, id="16 GiB TF32: 32"),
        pytest.param(None, "amp-bf16", 40960, 112, 1024, id="quarter area: 4x, capped at 1024"),
        pytest.param(None, "fp32", 0, 64, 8, id="CPU: 8"),
        pytest.param(48, "fp32", 81920, 224, 48, id="a given size is used as is"),
    ],
)
def test_batch_candidates(
    requested: int | None, mode: str, memory_mib: int, image_size: int, expected_first: int
) -> None:
    candidates = load_worker().batch_candidates(requested, mode, memory_mib, image_size)
    assert candidates[0] == expected_first
    assert candidates == sorted(candidates, reverse=True) and candidates[-1] in (1, 8, 48)


def test_a_mode_starts_its_search_at_the_batch_its_memory_class_fitted() -> None:
    """fp32 and tf32 store the same bytes per image, as do amp-fp16 and amp-bf16; FP32 and AMP
    never share a batch (AMP's would not fit in FP32, FP32's would waste AMP's memory)."""
    plan = load_worker().batch_plan
    h200 = 143771
    assert plan(None, "tf32", h200, 224, {})[0] == 256, "nothing fitted yet: the guess"
    assert plan(None, "tf32", h200, 224, {"fp32": 64}) == [64, 32, 16, 8, 4, 2, 1]
    assert plan(None, "amp-fp16", h200, 224, {"amp": 256})[0] == 256
    assert plan(None, "amp-bf16", h200, 224, {"fp32": 64})[0] == 512, "not across FP32 and AMP"
    assert plan(48, "tf32", h200, 224, {"fp32": 64}) == [48], "a given size is used as is"


def test_the_search_after_a_backoff_skips_the_sizes_that_did_not_fit() -> None:
    """The saving: fp32 backed off twice; tf32 then tries only the size that fitted."""
    worker = load_worker()
    fitted: dict[str, int] = {}
    tried: dict[str, list[int]] = {}
    for mode in ("fp32", "tf32"):
        chosen, _, calls = search(worker.batch_plan(None, mode, 40960, 224, fitted), fits_up_to=40)
        fitted[worker.MEMORY_CLASSES[mode]] = chosen
        tried[mode] = [int(c.split()[1]) for c in calls if c.startswith("try")]
    assert tried == {"fp32": [128, 64, 32], "tf32": [32]}


@pytest.mark.slow
def test_batch_fitted_starts_the_search_there(torch_python: str, tmp_path: Path) -> None:
    at = TINY.index("--batch-size")
    tiny = TINY[:at] + TINY[at + 2 :]
    argv = [torch_python, str(WORKER), "--device", "cpu", "--modes", "fp32", *tiny]
    run = run_worker([*argv, "--batch-fitted", "fp32=2"], tmp_path)
    assert run.returncode == 0, run.stderr
    (result,) = run.of(Result)
    assert result.batch_size == 2  # not the CPU's 8
    assert "fp32: the batch search starts at 2, fitted before" in run.stderr


def test_batch_fitted_takes_mode_equals_size() -> None:
    worker = load_worker()
    args = worker.parse_args(["--batch-fitted", "amp-bf16=256", "--batch-fitted", "fp32=64"])
    assert args.batch_fitted == [("amp-bf16", 256), ("fp32", 64)]
    with pytest.raises(SystemExit):
        worker.parse_args(["--batch-fitted", "fp64=8"])


def test_gpus_before_ampere_skip_tf32_and_bf16() -> None:
    skip_reason = load_worker().skip_reason
    assert "this GPU is 7.0" in skip_reason("amp-bf16", "cuda", (7, 0))
    assert "8.0 or newer" in skip_reason("tf32", "cuda", (7, 5))
    assert skip_reason("amp-fp16", "cuda", (7, 0)) is None
    assert skip_reason("tf32", "cuda", (9, 0)) is None


# ---------------------------------------------------------------- the worker stays standalone


def test_worker_imports_only_the_stdlib_torch_torchvision_and_numpy() -> None:
    allowed = sys.stdlib_module_names | {"torch", "torchvision", "numpy"}
    imported = set()
    for node in ast.walk(ast.parse(WORKER.read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative imports do not work in a standalone script"
            imported.add((node.module or "").split(".")[0])
    assert imported <= allowed, imported - allowed
    assert "gpuwizard" not in imported


def test_worker_imports_torch_only_inside_functions() -> None:
    """So that --help and the no-torch error work in a Python without torch."""
    top_level = set()
    for node in ast.parse(WORKER.read_text()).body:
        if isinstance(node, ast.Import):
            top_level |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            top_level.add((node.module or "").split(".")[0])
    assert not top_level & {"torch", "torchvision", "numpy"}


def test_worker_speaks_this_protocol_version() -> None:
    worker = load_worker()
    assert worker.SCHEMA == protocol.SCHEMA
    assert worker.MODES == protocol.MODES


# ---------------------------------------------------------------- the stopping rule (issue 27)
@pytest.mark.parametrize(
    ("stream", "stops_after"),
    [
        pytest.param([1000.0, 1003, 998, 1001, 999, 1000, 1002], 5, id="steady: the first five"),
        pytest.param([700.0, 850, 990, 1000, 1004, 998, 1001, 999], 7, id="warming up, then steady"),
        pytest.param([1000.0, 1030, 970, 1025, 975, 1020, 980, 1015, 985, 1010], None, id="noisy: never"),
        pytest.param([1000.0 - 8 * n for n in range(12)], None, id="drifting down: never"),
    ],
)  # fmt: skip
def test_a_mode_stops_once_its_last_five_samples_agree_within_one_percent(
    stream: list[float], stops_after: int | None
) -> None:
    from gpuwizard.bench.gpu_worker import steady

    stopped = next((n for n in range(1, len(stream) + 1) if steady(stream[:n])), None)
    assert stopped == stops_after


def test_the_timed_loop_stops_when_steady_and_at_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop asks the rule after each sample; --fixed and the limit still bound it."""
    import types

    from gpuwizard.bench import gpu_worker

    def run_with(values: list[float], steps: int, fixed: bool = False) -> int:
        given = iter(values)
        monkeypatch.setattr(gpu_worker, "sample_fields", lambda *a: {"images_per_s": next(given)})
        args = types.SimpleNamespace(steps=steps, sample_every=3, fixed=fixed)
        events = types.SimpleNamespace(emit=lambda kind, **fields: None)
        run = types.SimpleNamespace(args=args, sync=lambda: None, events=events)
        return len(gpu_worker.timed_samples(run, "tf32", 8, lambda: None))  # type: ignore[arg-type]

    steady_stream = [1000.0] * 20
    assert run_with(steady_stream, steps=60) == 5, "steady: 5 samples (15 steps), not 20"
    assert run_with(steady_stream, steps=60, fixed=True) == 20, "--fixed runs every step"
    assert run_with([1000.0 + 50 * (n % 2) for n in range(30)], steps=60) == 20, "noisy: the limit"
