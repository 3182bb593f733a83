"""The benchmark worker's event stream: one JSON object per line on its stdout.

The worker (``gpu_worker.py``) runs in the target environment's Python and cannot import this
module, so it writes plain dicts; this module is the typed reading of them, and a test keeps the
two in step (``SCHEMA`` here equals the worker's). Every line is ``{"v": SCHEMA, "kind": ...}``
plus the fields of one event below. Only rank 0 writes; other ranks report through it.

Stream order: ``started``, then per mode ``warmup``/``oom`` .. ``sample``* .. ``result`` (or
``skipped``/``error``), then ``allreduce`` and ``dataload`` when asked, then ``finished``. A
stream that ends without ``finished`` is a worker that died.

Modes: ``fp32`` (strict: TF32 off), ``tf32``, ``amp-fp16`` (autocast float16 + GradScaler),
``amp-bf16`` (autocast bfloat16). Exit codes: 0 every requested part ran, 1 a part failed,
2 the environment cannot run the benchmark (no torch, no GPU when one was asked for).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar, Literal

from gpuwizard.core.codec import CodecError, from_jsonable

SCHEMA = 1
Mode = Literal["fp32", "tf32", "amp-fp16", "amp-bf16"]
MODES: tuple[Mode, ...] = ("fp32", "tf32", "amp-fp16", "amp-bf16")


class ProtocolError(ValueError):
    """A line that is not an event of this schema; the message says which and why."""


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    capability: str
    """"9.0" for sm_90."""
    memory_mib: int


@dataclass(frozen=True)
class Started:
    KIND: ClassVar[str] = "started"
    torch: str
    torchvision: str
    cuda: str | None
    """torch.version.cuda: the CUDA the build targets; None for a CPU build."""
    device: Literal["cuda", "cpu"]
    world_size: int
    backend: str | None
    """nccl or gloo under torchrun; None for one process."""
    gpus: tuple[GpuInfo, ...]
    model: str
    image_size: int
    modes: tuple[Mode, ...]
    python: str
    compiled: bool
    channels_last: bool


@dataclass(frozen=True)
class Warmup:
    KIND: ClassVar[str] = "warmup"
    mode: Mode
    batch_size: int
    """Per process (per GPU)."""
    step: int
    steps: int


@dataclass(frozen=True)
class OutOfMemory:
    """A batch size did not fit; the worker backs off to ``next`` (None: nothing fits)."""

    KIND: ClassVar[str] = "oom"
    mode: Mode
    batch_size: int
    next: int | None


@dataclass(frozen=True)
class Sample:
    KIND: ClassVar[str] = "sample"
    mode: Mode
    t: float
    """Seconds since the worker started."""
    step: int
    batch_size: int
    world_size: int
    images_per_s: float
    """All ranks together, over this sample's steps."""
    step_ms: float
    per_rank: tuple[float, ...]
    """Images/s of each rank."""
    memory_mib: tuple[int, ...]
    """Peak memory of each rank's device (0 on a CPU)."""


@dataclass(frozen=True)
class Result:
    KIND: ClassVar[str] = "result"
    mode: Mode
    world_size: int
    batch_size: int
    images_per_s: float
    """Median of the steady-state samples, all ranks together."""
    per_gpu: float
    step_ms: float
    samples: int
    memory_mib: int
    """Peak over the ranks."""
    per_rank: tuple[float, ...] = ()
    """Each rank's median images/s (empty from workers before it was reported)."""


@dataclass(frozen=True)
class Skipped:
    KIND: ClassVar[str] = "skipped"
    mode: Mode
    reason: str


@dataclass(frozen=True)
class AllReduceSize:
    bytes: int
    time_us: float
    algbw_gbs: float
    busbw_gbs: float
    """algbw x 2(n-1)/n, as nccl-tests reports it."""


@dataclass(frozen=True)
class AllReduce:
    KIND: ClassVar[str] = "allreduce"
    world_size: int
    backend: str
    sizes: tuple[AllReduceSize, ...]


@dataclass(frozen=True)
class DataLoad:
    KIND: ClassVar[str] = "dataload"
    path: str
    """The directory whose disk was read."""
    disk_read_mb_s: float
    """Cold sequential read of a scratch file there (page cache dropped for it)."""
    loader_images_per_s: float
    """A np.memmap-backed Dataset through a DataLoader with workers and pinned memory."""
    workers: int
    pin_memory: bool
    batch_size: int
    image_size: int


@dataclass(frozen=True)
class Error:
    KIND: ClassVar[str] = "error"
    mode: Mode | None
    error: Literal["oom", "environment", "runtime", "distributed"]
    message: str


@dataclass(frozen=True)
class Finished:
    KIND: ClassVar[str] = "finished"
    ok: bool
    seconds: float


BenchEvent = (
    Started
    | Warmup
    | OutOfMemory
    | Sample
    | Result
    | Skipped
    | AllReduce
    | DataLoad
    | Error
    | Finished
)


def parse_line(line: str) -> BenchEvent:
    """One line of the worker's stdout as an event; ProtocolError for anything else."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        raise ProtocolError(f"not JSON: {line[:80]!r} ({error.msg})") from None
    if not isinstance(data, dict):
        raise ProtocolError(f"not an event object: {line[:80]!r}")
    version = data.pop("v", None)
    if version != SCHEMA:
        raise ProtocolError(f"schema {version!r} is not {SCHEMA}: a worker from another gpuwizard?")
    try:
        return from_jsonable(BenchEvent, data)  # type: ignore[arg-type]
    except CodecError as error:
        raise ProtocolError(f"{data.get('kind', '?')} event: {error}") from None
