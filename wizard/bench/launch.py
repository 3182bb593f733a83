"""Run the benchmark worker in the target environment and follow its event stream.

The worker is not a runner step: it changes nothing on the machine, so it runs as a plain child
process of the front end (an SSH drop only costs a rerun). One job is one or two worker runs:
every mode on one GPU (plus the data-loading check), then, with more than one GPU, the best AMP
mode under ``torchrun`` on all of them with the all-reduce test. Every raw line is kept in
``stream.jsonl`` beside the worker's stderr (``worker.log``), so a run can be replayed, shown
again and exported. While it runs, NVML is read once a second through the host door, for the
verdict's likely causes (PCIe link under load, clock limits).
"""

from __future__ import annotations

import contextlib
import os
import queue
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO, TextIO

from gpuwizard.bench.files import make_private_dir, private_binary, private_text
from gpuwizard.bench.protocol import (
    MODES,
    BenchEvent,
    Error,
    Finished,
    Mode,
    ProtocolError,
    Result,
    parse_line,
)
from gpuwizard.core.facts import Nvml, NvmlOk

WORKER = Path(__file__).with_name("gpu_worker.py")
NVML_EVERY_S = 1.0
EXIT_UNUSABLE = 2
"""The worker's exit code for an environment that cannot run the benchmark at all."""
AMP_PREFERENCE: tuple[Mode, ...] = ("amp-bf16", "amp-fp16")
CPU_RANKS = 2
CPU_DDP_PREFERENCE: tuple[Mode, ...] = ("fp32", "amp-bf16")
"""The modes a CPU runs (the others are skipped there), fastest first."""
CPU_ALLREDUCE_MIB = 8


@dataclass(frozen=True)
class BenchSpec:
    """What to run. ``python`` is the argv that starts the target environment's interpreter."""

    python: tuple[str, ...]
    gpus: int
    """GPUs on the machine to use (0: a CPU run)."""
    modes: tuple[Mode, ...] = MODES
    batch_size: int | None = None
    compile: bool = False
    dataload_dir: str | None = None
    ddp: bool = True
    allreduce_max_mib: int = 4096
    """Published all-reduce peaks are for messages of 4-16 GiB; smaller ones never reach them."""
    extra: tuple[str, ...] = ()
    """More worker arguments (tests: small models and sizes)."""


@dataclass(frozen=True)
class Phase:
    name: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    """Environment for this run on top of the job's."""
    reuses: Mode | None = None
    """The mode whose one-device batch this run starts from (``fitted_args``), if any."""


def phases(spec: BenchSpec, worker: Path = WORKER, cpus: int | None = None) -> list[Phase]:
    """The worker runs a spec needs, in order.

    With GPUs: every mode on one, then DDP on all of them when there are several. Without: the
    CPU modes in one process, then DDP over ``CPU_RANKS`` processes on gloo, each with the same
    threads as the single run, so that the real multi-process path (process group, gradient
    all-reduce, both ranks' timings) runs here too and its scaling compares like with like.
    """
    common = [*(("--batch-size", str(spec.batch_size)) if spec.batch_size else ())]
    common += ["--compile"] if spec.compile else []
    common += ["--device", "cuda" if spec.gpus else "cpu", *spec.extra]
    single = [*spec.python, str(worker), "--modes", ",".join(spec.modes), *common]
    if spec.dataload_dir:
        single += ["--dataload", spec.dataload_dir]
    if not spec.gpus:
        return cpu_phases(spec, worker, tuple(single), common, cpus)
    runs = [Phase("one GPU", tuple(single))]
    if spec.ddp and spec.gpus > 1:
        amp = next((m for m in AMP_PREFERENCE if m in spec.modes), spec.modes[0])
        ddp = ddp_argv(spec, worker, spec.gpus, amp, common)
        runs.append(Phase(f"DDP on {spec.gpus} GPUs", ddp, reuses=reused(spec, amp)))
    return runs


def cpu_phases(
    spec: BenchSpec, worker: Path, single: tuple[str, ...], common: list[str], cpus: int | None
) -> list[Phase]:
    if not spec.ddp:
        return [Phase("CPU", single)]
    threads = os.environ.get("OMP_NUM_THREADS") or str(
        max(1, (cpus or os.cpu_count() or 1) // CPU_RANKS)
    )
    env = (("OMP_NUM_THREADS", threads),)
    mode = next((m for m in CPU_DDP_PREFERENCE if m in spec.modes), spec.modes[0])
    ddp = ddp_argv(spec, worker, CPU_RANKS, mode, common, allreduce_mib=CPU_ALLREDUCE_MIB)
    return [
        Phase(f"CPU, {threads} thread{'' if threads == '1' else 's'}", single, env),
        Phase(
            f"DDP on {CPU_RANKS} CPU processes (gloo), a check of the multi-process path",
            ddp,
            env,
            reuses=reused(spec, mode),
        ),
    ]


def reused(spec: BenchSpec, mode: Mode) -> Mode | None:
    """The DDP run reuses the one-device run's batch for its mode, unless a batch was given."""
    return mode if spec.batch_size is None else None


def fitted_args(phase: Phase, events: Sequence[BenchEvent]) -> tuple[str, ...]:
    """``--batch-fitted MODE=N`` where an earlier run of this job measured the phase's mode on
    one device at batch N: the same model, precision and GPU type, so the DDP run's search
    starts there (one trial step on every rank) instead of at the memory-based guess."""
    fitted = [
        e.batch_size
        for e in events
        if isinstance(e, Result) and e.mode == phase.reuses and e.world_size == 1
    ]
    return ("--batch-fitted", f"{phase.reuses}={fitted[-1]}") if fitted else ()


def ddp_argv(
    spec: BenchSpec,
    worker: Path,
    ranks: int,
    mode: Mode,
    common: list[str],
    allreduce_mib: int | None = None,
) -> tuple[str, ...]:
    launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}"]
    mib = spec.allreduce_max_mib if allreduce_mib is None else allreduce_mib
    allreduce = ["--allreduce", "--allreduce-max-mib", str(mib)]
    return (*spec.python, *launcher, str(worker), "--modes", mode, *allreduce, *common)


@dataclass
class Outcome:
    events: list[BenchEvent] = field(default_factory=list)
    nvml: list[NvmlOk] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Runs that died or spoke nonsense, one line each."""
    cancelled: bool = False

    @property
    def ok(self) -> bool:
        return (
            not self.problems
            and not self.cancelled
            and not any(isinstance(e, Error) for e in self.events)
        )


class BenchJob:
    """A benchmark running in a background thread; ``poll`` hands over what arrived since."""

    def __init__(
        self,
        spec: BenchSpec,
        results_dir: Path,
        *,
        nvml: Callable[[], Nvml] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.spec = spec
        self.results_dir = results_dir
        self.nvml = nvml
        self.env = {**os.environ, **(env or {})}
        self.outcome = Outcome()
        self.queue: queue.Queue[BenchEvent | str] = queue.Queue()
        self.process: subprocess.Popen[bytes] | None = None
        self.cancelling = threading.Event()
        self.thread = threading.Thread(target=self._run, name="bench", daemon=True)

    # ---------------------------------------------------------------------------- control
    def start(self) -> None:
        make_private_dir(self.results_dir)
        self.thread.start()

    def poll(self) -> list[BenchEvent | str]:
        """Events since the last call; a str is a problem or phase line to show as is."""
        items = []
        with contextlib.suppress(queue.Empty):
            while True:
                items.append(self.queue.get_nowait())
        return items

    def running(self) -> bool:
        return self.thread.is_alive()

    def wait(self, timeout_s: float | None = None) -> Outcome:
        self.thread.join(timeout_s)
        return self.outcome

    def cancel(self) -> None:
        """Stop the worker (and its torchrun children) now; what arrived stays."""
        self.cancelling.set()
        process = self.process
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)

    # ---------------------------------------------------------------------------- the work
    def _run(self) -> None:
        stop_sampling = threading.Event()
        sampler = threading.Thread(target=self._sample_nvml, args=(stop_sampling,), daemon=True)
        if self.nvml is not None and self.spec.gpus:
            sampler.start()
        try:
            with (
                private_text(self.results_dir / "stream.jsonl", append=True) as stream,
                private_binary(self.results_dir / "worker.log", append=True) as log,
            ):
                for planned in phases(self.spec):
                    if self.cancelling.is_set():
                        break
                    extra = fitted_args(planned, self.outcome.events)
                    phase = replace(planned, argv=(*planned.argv, *extra))
                    self.queue.put(f"── {phase.name}")
                    log.write(f"── {phase.name}: {shlex.join(phase.argv)}\n".encode())
                    log.flush()
                    if not self._run_phase(phase, stream, log):
                        break  # the environment cannot run it: the next phase would not either
        except OSError as error:
            self._problem(f"cannot run the benchmark: {error}")
        finally:
            stop_sampling.set()
            self.outcome.cancelled = self.cancelling.is_set()

    def _run_phase(self, phase: Phase, stream: TextIO, log: BinaryIO) -> bool:
        """Run one worker to its end; False when its environment cannot run the benchmark."""
        try:
            process = subprocess.Popen(
                phase.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=self.results_dir,  # gpuwizard's own folder: torchrun's -m never sees the caller's
                env={**self.env, **dict(phase.env)},
                start_new_session=True,  # one group: cancel reaches torchrun's workers too
            )
        except OSError as error:
            self._problem(f"{phase.name}: cannot start {phase.argv[0]}: {error.strerror}")
            return False
        self.process = process
        finished = False
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if not line.strip():
                continue
            stream.write(line + "\n")
            stream.flush()
            try:
                event = parse_line(line)
            except ProtocolError as error:
                self._problem(f"{phase.name}: {error}")
                continue
            finished = finished or isinstance(event, Finished)
            self.outcome.events.append(event)
            self.queue.put(event)
        code = process.wait()
        if self.cancelling.is_set():
            return True
        if not finished:
            how = f"was killed by signal {-code}" if code < 0 else f"exited {code}"
            log_path = self.results_dir / "worker.log"
            said = last_line(log_path)
            self._problem(
                f"{phase.name}: the worker {how} before finishing"
                + (f": {said}" if said else "")
                + f" (see {log_path})"
            )
        return code != EXIT_UNUSABLE

    def _problem(self, line: str) -> None:
        self.outcome.problems.append(line)
        self.queue.put(line)

    def _sample_nvml(self, stop: threading.Event) -> None:
        assert self.nvml is not None
        while not stop.wait(NVML_EVERY_S):
            reading = self.nvml()
            if isinstance(reading, NvmlOk):
                self.outcome.nvml.append(reading)


def last_line(path: Path, limit: int = 4096) -> str:
    """The last non-empty line of a log, for a one-line account of why a process ended."""
    try:
        with path.open("rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - limit))
            tail = log.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def allreduce_max_mib(smallest_gpu_gib: float) -> int:
    """The largest all-reduce message to try: 4 GiB where it fits easily, else 1 GiB."""
    return 4096 if smallest_gpu_gib >= 40 else 1024


def results_dir(state_dir: Path, now: float | None = None) -> Path:
    """A new folder per run under the state directory: bench/20261202-153012."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return state_dir / "bench" / stamp
