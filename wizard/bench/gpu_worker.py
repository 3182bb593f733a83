"""The training benchmark worker: runs in the target environment and streams JSON events.

Run with that environment's Python, which has torch, torchvision and numpy but not gpuwizard:

    python gpu_worker.py --modes fp32,amp-bf16                  # one process, one device
    torchrun --standalone --nproc-per-node=8 gpu_worker.py ...  # DDP, one process per GPU

Each stdout line is one event, ``{"v": 1, "kind": ..., **fields}``, written and flushed by rank 0
alone; the other ranks report through collectives. ``wizard/bench/protocol.py`` is the typed
reading of the stream and documents its order and exit codes (0 all ran, 1 a part failed,
2 the environment cannot run). Diagnostics go to stderr.

The training loop follows the fastest public ResNet-50 runs: synthetic data resident on the
device, channels_last, cudnn.benchmark, warmup excluded, a device sync only at sample
boundaries, and optionally torch.compile. With one process ``--allreduce`` is skipped with a
note on stderr (there is nothing to reduce across), and ``--dataload`` runs on rank 0 only.

This file must stay one self-contained script: it may import only the standard library, and
torch, torchvision and numpy only inside functions, so that ``--help`` works without them.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA = 1
MODES = ("fp32", "tf32", "amp-fp16", "amp-bf16")
AMP_DTYPES = {"amp-fp16": "float16", "amp-bf16": "bfloat16"}
CPU_MODES = ("fp32", "amp-bf16")
MEMORY_CLASSES = {"fp32": "fp32", "tf32": "fp32", "amp-fp16": "amp", "amp-bf16": "amp"}
"""Modes that store the same bytes per image share a batch size: TF32 changes how FP32 matmuls
round, not what is stored, and float16 and bfloat16 activations are both two bytes. FP32 and AMP
never share one: AMP's activations take half the memory, so its batch would not fit in FP32."""
MIB = 2**20
CHUNK_BYTES = 4 * MIB
"""Sequential read size of the disk test."""
SCRATCH_PREFIX = ".gpuwizard-scratch-"
DESCRIPTION = "The gpuwizard training benchmark: JSON events on stdout, one per line."

TrainStep = Callable[[Any, Any], None]
"""One optimizer step on (images, labels)."""


class Events:
    """Writes protocol lines to stdout on the writing rank; remembers whether a part failed."""

    def __init__(self, is_writer: bool) -> None:
        self.is_writer = is_writer
        self.failed = False
        self.start = time.perf_counter()

    def emit(self, kind: str, **fields: Any) -> None:
        if kind == "error":
            self.failed = True
        if self.is_writer:
            sys.stdout.write(json.dumps({"v": SCHEMA, "kind": kind, **fields}) + "\n")
            sys.stdout.flush()

    def seconds(self) -> float:
        return round(time.perf_counter() - self.start, 3)


@dataclass(frozen=True)
class Run:
    """What every part of the benchmark needs: torch, the device, the process group."""

    torch: Any
    args: argparse.Namespace
    device: Any
    """The torch.device of this rank."""
    world_size: int
    backend: str | None
    events: Events
    fitted: dict[str, int] = field(default_factory=dict)
    """The batch size found per memory class (MEMORY_CLASSES) in this run or given by
    ``--batch-fitted``: a later mode of that class starts its search there."""

    @property
    def device_type(self) -> str:
        return str(self.device.type)

    def sync(self) -> None:
        if self.device_type == "cuda":
            self.torch.cuda.synchronize(self.device)


# ---------------------------------------------------------------- command line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    parser.add_argument("--modes", type=parse_modes, default=MODES, help="comma-separated")
    parser.add_argument("--batch-size", type=parse_batch_size, default=None, help="auto or N")
    parser.add_argument(
        "--batch-fitted", type=parse_fitted, action="append", default=[], metavar="MODE=N",
        help="a batch an earlier run of the same model fitted in MODE on this GPU type: the "
        "search for MODE's memory class starts there instead of at the memory-based guess",
    )  # fmt: skip
    parser.add_argument("--image-size", type=positive, help="default 224 on cuda, 64 on cpu")
    parser.add_argument("--model", choices=("resnet50", "resnet18"), default="resnet50")
    parser.add_argument("--warmup", type=non_negative, help="default 10 on cuda, 2 on cpu")
    parser.add_argument(
        "--steps", type=positive,
        help="the most timed steps; a mode stops sooner once steady (default 60 on cuda, 8 on cpu)",
    )  # fmt: skip
    parser.add_argument(
        "--sample-every", type=positive, help="steps per sample; default 3 (cuda), 1"
    )
    parser.add_argument(
        "--fixed", action="store_true", help="run every one of --steps, steady or not"
    )
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument("--no-channels-last", dest="channels_last", action="store_false")
    parser.add_argument("--allreduce", action="store_true", help="all_reduce bandwidth (DDP)")
    parser.add_argument("--allreduce-max-mib", type=positive, help="default 256 on cuda, 8 on cpu")
    parser.add_argument("--dataload", metavar="DIR", help="disk and DataLoader throughput")
    parser.add_argument(
        "--dataload-mib", type=positive, help="scratch size; 256 on cuda, 32 on cpu"
    )
    parser.add_argument("--train", action=argparse.BooleanOptionalAction, default=True)
    return parser.parse_args(argv)


def parse_modes(text: str) -> tuple[str, ...]:
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise argparse.ArgumentTypeError(f"modes are {', '.join(MODES)}; got {text!r}")
    return modes


def parse_batch_size(text: str) -> int | None:
    if text == "auto":
        return None
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected auto or a positive integer, got {text!r}")
    return int(text)


def parse_fitted(text: str) -> tuple[str, int]:
    mode, _, size = text.partition("=")
    if mode not in MODES or not size.isdigit() or int(size) < 1:
        raise argparse.ArgumentTypeError(f"expected MODE=N (N a positive integer), got {text!r}")
    return mode, int(size)


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def non_negative(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected 0 or a positive integer, got {text!r}")
    return int(text)


def fill_defaults(args: argparse.Namespace, device_type: str) -> None:
    """Device-dependent defaults: full size on a GPU, a quick run on a CPU."""
    on_gpu = device_type == "cuda"
    defaults = {
        "image_size": 224 if on_gpu else 64,
        "warmup": 10 if on_gpu else 2,
        "steps": 60 if on_gpu else 8,
        "allreduce_max_mib": 256 if on_gpu else 8,
        "dataload_mib": 256 if on_gpu else 32,
    }
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.sample_every is None:
        args.sample_every = 3 if on_gpu else 1


# ---------------------------------------------------------------- environment


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    events = Events(is_writer=os.environ.get("RANK", "0") == "0")
    try:
        import torch
        import torchvision
    except (ImportError, OSError) as error:  # OSError: a shared library of the wheel is missing
        return environment_failure(
            events, f"{error}: install torch and torchvision in {sys.executable}"
        )
    device_type = resolve_device(torch, args.device)
    if device_type is None:
        return environment_failure(events, why_no_cuda(torch))
    fill_defaults(args, device_type)
    run = start_run(torch, args, device_type, events)
    if run is None:
        events.emit("finished", ok=False, seconds=events.seconds())
        return 1
    events.emit("started", **started_fields(run, torchvision.__version__))
    try:
        run_parts(run)
    finally:
        if run.world_size > 1:
            torch.distributed.destroy_process_group()
    events.emit("finished", ok=not events.failed, seconds=events.seconds())
    return 1 if events.failed else 0


def environment_failure(events: Events, message: str) -> int:
    events.emit("error", mode=None, error="environment", message=message)
    events.emit("finished", ok=False, seconds=events.seconds())
    return 2


def resolve_device(torch: Any, requested: str) -> str | None:
    """cuda or cpu; None when cuda was asked for and is not there."""
    has_cuda = bool(torch.cuda.is_available())
    if requested == "auto":
        return "cuda" if has_cuda else "cpu"
    return None if requested == "cuda" and not has_cuda else requested


def why_no_cuda(torch: Any) -> str:
    problem = "--device cuda was asked for, but torch.cuda.is_available() is False"
    build = f"torch {torch.__version__}"
    if torch.version.cuda is None:
        return f"{problem}: {build} is a CPU-only build; install a CUDA build"
    return (
        f"{problem}: {build} is built for CUDA {torch.version.cuda}; check the driver (nvidia-smi)"
    )


def start_run(torch: Any, args: argparse.Namespace, device_type: str, events: Events) -> Run | None:
    """Join the process group when torchrun started several processes; None if that failed."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(device_type, local_rank) if device_type == "cuda" else torch.device("cpu")
    backend = None
    if world_size > 1:
        backend = "nccl" if device_type == "cuda" else "gloo"
        try:
            if device_type == "cuda":
                torch.cuda.set_device(device)
            torch.distributed.init_process_group(backend)
        except (RuntimeError, ValueError) as error:
            report_error(events, None, "distributed", error)
            return None
    torch.backends.cudnn.benchmark = True
    fitted = {MEMORY_CLASSES[mode]: size for mode, size in args.batch_fitted}
    return Run(torch, args, device, world_size, backend, events, fitted)


def started_fields(run: Run, torchvision_version: str) -> dict[str, Any]:
    torch, args = run.torch, run.args
    return {
        "torch": torch.__version__,
        "torchvision": torchvision_version,
        "cuda": torch.version.cuda,
        "device": run.device_type,
        "world_size": run.world_size,
        "backend": run.backend,
        "gpus": list(gpu_list(torch)) if run.device_type == "cuda" else [],
        "model": args.model,
        "image_size": args.image_size,
        "modes": list(args.modes),
        "python": platform.python_version(),
        "compiled": args.compile,
        "channels_last": args.channels_last,
    }


def gpu_list(torch: Any) -> Iterator[dict[str, Any]]:
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        yield {
            "index": index,
            "name": props.name,
            "capability": f"{props.major}.{props.minor}",
            "memory_mib": props.total_memory // MIB,
        }


def run_parts(run: Run) -> None:
    if run.args.train:
        for mode in run.args.modes:
            run_guarded(run, mode, functools.partial(train_mode, run, mode))
    if run.args.allreduce:
        run_guarded(run, None, lambda: measure_allreduce(run))
    if run.args.dataload:
        if run.events.is_writer:
            run_guarded(run, None, lambda: measure_dataload(run, run.args.dataload))
        if run.world_size > 1:
            run.torch.distributed.barrier()


def run_guarded(run: Run, mode: str | None, part: Callable[[], None]) -> None:
    """Run one part; a failure becomes an error event and the next part still runs."""
    try:
        part()
    except run.torch.cuda.OutOfMemoryError as error:
        report_error(run.events, mode, "oom", error)
    except run.torch.distributed.DistError as error:
        report_error(run.events, mode, "distributed", error)
    except Exception as error:  # any failure of one part is reported, then the next part runs
        report_error(run.events, mode, "runtime", error)
    finally:
        release_memory(run)


def report_error(events: Events, mode: str | None, kind: str, error: BaseException) -> None:
    traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
    lines = str(error).strip().splitlines()
    message = f"{type(error).__name__}: {lines[0] if lines else 'no message'}"
    events.emit("error", mode=mode, error=kind, message=message)


def release_memory(run: Run) -> None:
    gc.collect()
    if run.device_type == "cuda":
        run.torch.cuda.empty_cache()


# ---------------------------------------------------------------- training


def skip_reason(mode: str, device_type: str, capability: tuple[int, int]) -> str | None:
    """Why a mode does not apply to this device, or None when it does."""
    if device_type == "cpu" and mode not in CPU_MODES:
        if mode == "tf32":
            return "TF32 is a tensor-core mode of NVIDIA GPUs; this run is on the CPU"
        return "float16 autocast with a GradScaler is a GPU mode; on the CPU use amp-bf16"
    if device_type == "cuda" and mode in ("tf32", "amp-bf16") and capability < (8, 0):
        shown = f"{capability[0]}.{capability[1]}"
        return (
            f"{mode} needs compute capability 8.0 or newer (Ampere and later); this GPU is {shown}"
        )
    return None


def set_precision(torch: Any, mode: str) -> None:
    """TF32 on only for tf32 (strict FP32 for fp32; autocast modes keep the strict default)."""
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    torch.backends.cudnn.allow_tf32 = mode == "tf32"


def train_mode(run: Run, mode: str) -> None:
    """One mode: skip it, or find a batch size, warm up, and emit its samples and result."""
    torch = run.torch
    reason = skip_reason(mode, run.device_type, device_capability(run))
    if reason is not None:
        run.events.emit("skipped", mode=mode, reason=reason)
        return
    set_precision(torch, mode)
    model = build_model(run)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    batch_size = choose_batch_size(run, mode, model, make_train_step(run, model, optimizer, mode))
    if batch_size is None:
        run.events.emit(
            "error", mode=mode, error="oom", message="not even the smallest batch size fits"
        )
        return
    if run.device_type == "cuda":
        torch.cuda.reset_peak_memory_stats(run.device)  # forget the trials that did not fit
    step = make_train_step(run, wrap_model(run, model), optimizer, mode)
    images, labels = synthetic_batch(run, batch_size)
    for done in range(1, run.args.warmup + 1):
        step(images, labels)
        run.events.emit(
            "warmup", mode=mode, batch_size=batch_size, step=done, steps=run.args.warmup
        )
    samples = timed_samples(run, mode, batch_size, lambda: step(images, labels))
    run.events.emit("result", **result_fields(mode, run.world_size, batch_size, samples))


def device_capability(run: Run) -> tuple[int, int]:
    if run.device_type != "cuda":
        return (0, 0)
    major, minor = run.torch.cuda.get_device_capability(run.device)
    return (int(major), int(minor))


def choose_batch_size(run: Run, mode: str, model: Any, trial_step: TrainStep) -> int | None:
    """Try one eager step per candidate on the bare model (no DDP: an OOM must not strand a
    collective), largest first, until one fits on every rank."""

    def release() -> None:
        model.zero_grad(set_to_none=True)
        release_memory(run)

    def report_oom(batch: int, smaller: int | None) -> None:
        run.events.emit("oom", mode=mode, batch_size=batch, next=smaller)

    candidates = batch_plan(
        run.args.batch_size, mode, device_memory_mib(run), run.args.image_size, run.fitted
    )
    if run.args.batch_size is None and MEMORY_CLASSES[mode] in run.fitted:
        sys.stderr.write(f"{mode}: the batch search starts at {candidates[0]}, fitted before\n")
    chosen = search_batch_size(
        candidates,
        try_step=lambda batch: trial_step(*synthetic_batch(run, batch)),
        oom_error=run.torch.cuda.OutOfMemoryError,
        agree=lambda fits: agree_all(run, fits),
        release=release,
        on_oom=report_oom,
    )
    if chosen is not None and run.args.batch_size is None:
        run.fitted[MEMORY_CLASSES[mode]] = chosen
    return chosen


def build_model(run: Run) -> Any:
    import torchvision

    run.torch.manual_seed(0)
    model = getattr(torchvision.models, run.args.model)(weights=None).to(run.device)
    if run.args.channels_last:
        model = model.to(memory_format=run.torch.channels_last)
    return model.train()


def wrap_model(run: Run, model: Any) -> Any:
    """DDP across the ranks, then torch.compile when asked (compile wraps DDP, not the reverse)."""
    torch = run.torch
    if run.world_size > 1:
        device_ids = [run.device.index] if run.device_type == "cuda" else None
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=device_ids, gradient_as_bucket_view=True
        )
    return torch.compile(model) if run.args.compile else model


def make_train_step(run: Run, model: Any, optimizer: Any, mode: str) -> TrainStep:
    torch = run.torch
    criterion = torch.nn.CrossEntropyLoss()
    dtype = getattr(torch, AMP_DTYPES[mode]) if mode in AMP_DTYPES else None
    scaler = torch.amp.GradScaler(run.device_type) if mode == "amp-fp16" else None

    def autocast() -> Any:
        if dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(run.device_type, dtype=dtype)

    def step(images: Any, labels: Any) -> None:
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            loss = criterion(model(images), labels)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()

    return step


def synthetic_batch(run: Run, batch_size: int) -> tuple[Any, Any]:
    """Random images and labels, created once on the device, so no loader is measured."""
    torch, size = run.torch, run.args.image_size
    images = torch.randn(batch_size, 3, size, size, device=run.device)
    if run.args.channels_last:
        images = images.contiguous(memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (batch_size,), device=run.device)
    return images, labels


def device_memory_mib(run: Run) -> int:
    if run.device_type != "cuda":
        return 0
    return int(run.torch.cuda.get_device_properties(run.device).total_memory // MIB)


def batch_candidates(
    requested: int | None, mode: str, memory_mib: int, image_size: int
) -> list[int]:
    """Batch sizes to try, largest first: powers of two from a memory-based guess down to 1.

    A 40 GiB GPU takes 256 images of 224 px per step with AMP and 128 without; the guess scales
    with memory and inversely with the image area. A CPU (memory_mib 0) just uses 8.
    """
    if requested is not None:
        return [requested]
    if memory_mib <= 0:
        return [8]
    per_40gib = 256 if mode in AMP_DTYPES else 128
    budget = per_40gib * memory_mib / 40960 * (224 / image_size) ** 2
    top = 1
    while top * 2 <= min(budget, 1024):
        top *= 2
    return [top >> shift for shift in range(top.bit_length())]


def batch_plan(
    requested: int | None, mode: str, memory_mib: int, image_size: int, fitted: dict[str, int]
) -> list[int]:
    """The sizes to try for a mode: the one asked for; else halvings of the size a mode of the
    same memory class fitted before (it still gets its trial step, so a DDP rank that runs out
    of memory backs off with the others instead of stranding a collective); else the guess."""
    known = fitted.get(MEMORY_CLASSES[mode])
    if requested is not None or known is None:
        return batch_candidates(requested, mode, memory_mib, image_size)
    return [known >> shift for shift in range(known.bit_length())]


def search_batch_size(
    candidates: Sequence[int],
    try_step: Callable[[int], None],
    oom_error: type[BaseException],
    agree: Callable[[bool], bool],
    release: Callable[[], None],
    on_oom: Callable[[int, int | None], None],
) -> int | None:
    """The first candidate whose trial step fits on every rank; None when none does.

    ``agree`` turns this rank's verdict into the common one (a MIN over the ranks), so all ranks
    back off together; ``on_oom(batch, next)`` reports each size that did not fit.
    """
    for index, batch in enumerate(candidates):
        try:
            try_step(batch)
            fits = True
        except oom_error:
            fits = False
        release()  # outside the except block: the traceback no longer pins the failed step
        if agree(fits):
            return batch
        on_oom(batch, candidates[index + 1] if index + 1 < len(candidates) else None)
    return None


def agree_all(run: Run, fits: bool) -> bool:
    if run.world_size == 1:
        return fits
    flag = run.torch.tensor([int(fits)], device=run.device)
    run.torch.distributed.all_reduce(flag, op=run.torch.distributed.ReduceOp.MIN)
    return bool(flag.item())


def timed_samples(
    run: Run, mode: str, batch_size: int, step: Callable[[], None]
) -> list[dict[str, Any]]:
    """Run the timed steps, syncing the device only at sample boundaries; emit each sample. Stop
    once the throughput is steady (``steady``, below), or after ``--steps``."""
    args, done = run.args, 0
    samples: list[dict[str, Any]] = []
    while done < args.steps and (args.fixed or not steady([s["images_per_s"] for s in samples])):
        count = min(args.sample_every, args.steps - done)
        run.sync()
        begin = time.perf_counter()
        for _ in range(count):
            step()
        run.sync()
        elapsed = time.perf_counter() - begin
        done += count
        sample = sample_fields(run, mode, batch_size, done, count, elapsed)
        run.events.emit("sample", **sample)
        samples.append(sample)
    return samples


STEADY_WINDOW = 5
"""The samples the stopping rule looks at: the last five."""
STEADY_TOLERANCE = 0.01
"""How far from their median each of them may be: 1%."""


def steady(
    values: Sequence[float], window: int = STEADY_WINDOW, tolerance: float = STEADY_TOLERANCE
) -> bool:
    """A mode's throughput has settled: its last ``window`` samples all lie within
    ``tolerance`` of their median (issue 27). A steady GPU stops after 15 timed steps where a
    fixed count ran 30; a noisy or drifting one (clocks settling, a neighbour's load) runs on
    to ``--steps``. Every rank decides from the same gathered numbers, so DDP ranks stop
    together. The result is still the median of every timed sample."""
    if len(values) < window:
        return False
    last = values[-window:]
    middle = statistics.median(last)
    return middle > 0 and all(abs(v - middle) <= tolerance * middle for v in last)


def sample_fields(
    run: Run, mode: str, batch_size: int, step: int, count: int, elapsed: float
) -> dict[str, Any]:
    """One sample, with every rank's time and peak memory gathered to this rank."""
    memory = (
        run.torch.cuda.max_memory_allocated(run.device) // MIB if run.device_type == "cuda" else 0
    )
    ranks = gather_floats(run, [elapsed, float(memory)])
    slowest = max(seconds for seconds, _ in ranks)
    return {
        "mode": mode,
        "t": run.events.seconds(),
        "step": step,
        "batch_size": batch_size,
        "world_size": run.world_size,
        "images_per_s": batch_size * run.world_size * count / slowest,
        "step_ms": slowest / count * 1000,
        "per_rank": [batch_size * count / seconds for seconds, _ in ranks],
        "memory_mib": [int(mib) for _, mib in ranks],
    }


def gather_floats(run: Run, values: list[float]) -> list[list[float]]:
    """Each rank's ``values``, in rank order (a small all_gather of one float64 tensor)."""
    if run.world_size == 1:
        return [values]
    torch = run.torch
    mine = torch.tensor(values, dtype=torch.float64, device=run.device)
    every = [torch.empty_like(mine) for _ in range(run.world_size)]
    torch.distributed.all_gather(every, mine)
    return [[float(v) for v in t.tolist()] for t in every]


def result_fields(
    mode: str, world_size: int, batch_size: int, samples: list[dict[str, Any]]
) -> dict[str, Any]:
    images_per_s = statistics.median(s["images_per_s"] for s in samples)
    return {
        "mode": mode,
        "world_size": world_size,
        "batch_size": batch_size,
        "images_per_s": images_per_s,
        "per_gpu": images_per_s / world_size,
        "step_ms": statistics.median(s["step_ms"] for s in samples),
        "samples": len(samples),
        "memory_mib": max(max(s["memory_mib"]) for s in samples),
        "per_rank": [
            statistics.median(s["per_rank"][rank] for s in samples) for rank in range(world_size)
        ],
    }


# ---------------------------------------------------------------- all_reduce


def measure_allreduce(run: Run, warmup: int = 3, iterations: int = 10) -> None:
    """all_reduce bandwidth over float32 tensors of 1 MiB doubling to --allreduce-max-mib."""
    if run.world_size == 1:
        sys.stderr.write("allreduce: skipped, one process has nothing to reduce across\n")
        return
    sizes, size = [], MIB
    while size <= run.args.allreduce_max_mib * MIB:
        seconds = time_allreduce(run, size, warmup, iterations)
        algbw = size / seconds / 1e9
        busbw = algbw * 2 * (run.world_size - 1) / run.world_size
        sizes.append(
            {"bytes": size, "time_us": seconds * 1e6, "algbw_gbs": algbw, "busbw_gbs": busbw}
        )
        size *= 2
    run.events.emit("allreduce", world_size=run.world_size, backend=run.backend, sizes=sizes)


def time_allreduce(run: Run, size: int, warmup: int, iterations: int) -> float:
    """Seconds per all_reduce of ``size`` bytes, as the slowest rank saw it."""
    torch, dist = run.torch, run.torch.distributed
    tensor = torch.ones(size // 4, dtype=torch.float32, device=run.device)
    for _ in range(warmup):
        dist.all_reduce(tensor)
    run.sync()
    dist.barrier()
    begin = time.perf_counter()
    for _ in range(iterations):
        dist.all_reduce(tensor)
    run.sync()
    elapsed = torch.tensor([(time.perf_counter() - begin) / iterations], device=run.device)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    return float(elapsed.item())


# ---------------------------------------------------------------- data loading


def measure_dataload(run: Run, directory: str) -> None:
    """Cold disk read and DataLoader throughput in ``directory``; scratch files always removed."""
    scratch_bytes = run.args.dataload_mib * MIB
    with scratch_file(directory) as path:
        disk_mb_s = disk_read_mb_s(path, scratch_bytes)
    batch_size = 64 if run.device_type == "cuda" else 16
    workers = min(8, os.cpu_count() or 1)
    pin_memory = run.device_type == "cuda"
    with scratch_file(directory) as path:
        images_per_s = loader_images_per_s(
            run, path, scratch_bytes, batch_size, workers, pin_memory
        )
    run.events.emit(
        "dataload",
        path=directory,
        disk_read_mb_s=disk_mb_s,
        loader_images_per_s=images_per_s,
        workers=workers,
        pin_memory=pin_memory,
        batch_size=batch_size,
        image_size=run.args.image_size,
    )


@contextlib.contextmanager
def scratch_file(directory: str) -> Iterator[str]:
    handle, path = tempfile.mkstemp(prefix=SCRATCH_PREFIX, dir=directory)
    os.close(handle)
    try:
        yield path
    finally:
        Path(path).unlink()


def disk_read_mb_s(path: str, size_bytes: int) -> float:
    """Write ``size_bytes``, fsync, drop them from the page cache, then time a sequential read."""
    block = os.urandom(CHUNK_BYTES)
    with Path(path).open("wb") as out:
        for _ in range(max(1, size_bytes // CHUNK_BYTES)):
            out.write(block)
        out.flush()
        os.fsync(out.fileno())
    with Path(path).open("rb", buffering=0) as source:
        os.posix_fadvise(source.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        buffer = bytearray(CHUNK_BYTES)
        total, begin = 0, time.perf_counter()
        while count := source.readinto(buffer):
            total += count
        elapsed = time.perf_counter() - begin
    return total / elapsed / 1e6


class MemmapImages:
    """uint8 images (N x 3 x S x S) in a file, opened lazily so that workers map it themselves."""

    def __init__(self, path: str, count: int, image_size: int) -> None:
        self.path, self.shape = path, (count, 3, image_size, image_size)
        self.array: Any = None

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index: int) -> Any:
        import numpy

        if self.array is None:
            self.array = numpy.memmap(self.path, dtype=numpy.uint8, mode="r", shape=self.shape)
        return numpy.array(self.array[index])

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "array": None}  # each worker maps the file; never pickle the data


def loader_images_per_s(
    run: Run, path: str, size_bytes: int, batch_size: int, workers: int, pin_memory: bool
) -> float:
    """Images/s through a DataLoader over a memmap file, converted to float on the device."""
    import numpy

    size: int = run.args.image_size
    count = max(batch_size * 4, size_bytes // (3 * size * size))
    images = numpy.memmap(path, dtype=numpy.uint8, mode="w+", shape=(count, 3, size, size))
    images[:] = numpy.random.default_rng(0).integers(
        0, 256, size=images.shape[1:], dtype=numpy.uint8
    )
    images.flush()
    del images
    loader = run.torch.utils.data.DataLoader(
        MemmapImages(path, count, size),
        batch_size=batch_size,
        num_workers=workers,
        pin_memory=pin_memory,
        persistent_workers=False,
    )
    epochs, begin = 2, time.perf_counter()
    for _ in range(epochs):
        for batch in loader:
            batch.to(run.device, non_blocking=True).float().div_(255)
    run.sync()
    return count * epochs / (time.perf_counter() - begin)


if __name__ == "__main__":
    sys.exit(main())
