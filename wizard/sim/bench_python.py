"""The simulated machine's target Python, as far as the benchmark needs one.

``python -m gpuwizard.sim.bench_python --env ENV <argv as for python>`` takes the argv the real
interpreter would get (``-I gpu_worker.py ...`` or ``-I -m torch.distributed.run ...
gpu_worker.py ...``; without ``-I`` it refuses, as gpuwizard never starts a Python that would
import from the caller's folder) and writes the event stream the worker would, for the sandbox's GPUs: plausible numbers
(the best published PyTorch rate for the GPU, a little above, as a tuned run gets), at a pace a
person can watch. It refuses, like the real one, when torch is not installed in ENV or the
driver is not loaded. Set GPUWIZARD_SIM_BENCH_PACE=0 for no waiting (tests).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

from gpuwizard.bench.gpu_worker import steady
from gpuwizard.bench.protocol import MODES, SCHEMA, Mode
from gpuwizard.bench.references import load_references, mode_class
from gpuwizard.core.facts import Gpu
from gpuwizard.core.isolation import ISOLATED
from gpuwizard.machine.detect.python_envs import read_interpreters
from gpuwizard.machine.detect.torch_envs import read_torch_envs
from gpuwizard.sim import effects
from gpuwizard.sim.machine import loaded_modules, sandbox_host, sim_gpus, sim_has_nvswitch
from gpuwizard.sim.sandbox import SIM_ENV, Sandbox

PACE_ENV = "GPUWIZARD_SIM_BENCH_PACE"
AMP_WITHOUT_REFERENCE = {"t4": 260.0, "l4": 330.0, "l40s": 1550.0, "4090": 1450.0, "5090": 2100.0}
"""AMP img/s per GPU for GPUs the references do not cover (estimates, for the demo only)."""


class Stream:
    def __init__(self, pace: float) -> None:
        self.start = time.monotonic()
        self.pace = pace
        self.noise = random.Random(0)  # the same run every time: tests and demos repeat

    def emit(self, kind: str, **fields: object) -> None:
        sys.stdout.write(json.dumps({"v": SCHEMA, "kind": kind, **fields}) + "\n")
        sys.stdout.flush()

    def wait(self, seconds: float) -> None:
        if self.pace:
            time.sleep(seconds * self.pace)

    @property
    def t(self) -> float:
        return round(time.monotonic() - self.start, 3)


def rate(gpu: Gpu, mode: Mode) -> float:
    """A tuned run's img/s per GPU on this model, in this mode."""
    references = load_references()
    name = gpu.model.name
    best = [r for r in references.train_for(name, mode) if r.kind == "pytorch" and r.gpus == 1]
    if best:
        return best[0].per_gpu * 1.06
    amp_rows = [r for r in references.train_for(name, "amp-fp16") if r.kind == "pytorch"]
    amp = amp_rows[0].per_gpu * 1.06 if amp_rows else _amp_estimate(name)
    return {"amp": amp, "tf32": amp * 0.45, "fp32": amp * 0.19}[mode_class(mode)]


def _amp_estimate(name: str) -> float:
    lowered = name.lower()
    return next((v for k, v in AMP_WITHOUT_REFERENCE.items() if k in lowered), 1000.0)


def skip_reason(gpu: Gpu, mode: Mode) -> str | None:
    major = int((gpu.model.compute_capability or "0.0").split(".")[0])
    if mode in ("tf32", "amp-bf16") and major < 8:
        what = "TF32" if mode == "tf32" else "bfloat16"
        return f"{what} needs compute capability 8.0 or newer; this GPU is {gpu.model.compute_capability}"
    return None


def train(out: Stream, gpus: list[Gpu], mode: Mode, world: int, batch: int) -> None:
    gpu = gpus[0]
    if reason := skip_reason(gpu, mode):
        out.emit("skipped", mode=mode, reason=reason)
        return
    for step in range(1, 6):
        out.emit("warmup", mode=mode, batch_size=batch, step=step, steps=5)
        out.wait(0.08)
    efficiency = 0.985 if world > 1 else 1.0
    per_gpu = rate(gpu, mode) * efficiency
    values: list[float] = []
    for sample in range(1, 11):  # the worker's rule: on until steady, at most its limit
        if steady(values):
            break
        out.wait(0.2)
        ranks = [per_gpu * out.noise.uniform(0.985, 1.01) for _ in range(world)]
        total = sum(ranks)
        values.append(total)
        memory = int((gpu.model.memory_gib or 16) * 1024 * 0.62)
        out.emit(
            "sample", mode=mode, t=out.t, step=5 + sample * 3, batch_size=batch, world_size=world,
            images_per_s=round(total, 1), step_ms=round(1000 * batch * world / total, 2),
            per_rank=[round(r, 1) for r in ranks], memory_mib=[memory] * world,
        )  # fmt: skip
    middle = sorted(values)[len(values) // 2]
    out.emit(
        "result", mode=mode, world_size=world, batch_size=batch, images_per_s=round(middle, 1),
        per_gpu=round(middle / world, 1), step_ms=round(1000 * batch * world / middle, 2),
        samples=len(values), memory_mib=int((gpu.model.memory_gib or 16) * 1024 * 0.62),
    )  # fmt: skip


def allreduce(out: Stream, gpus: list[Gpu], world: int, nvswitch: bool, max_mib: int) -> None:
    reference = load_references().allreduce_for(gpus[0].model.name, nvswitch)
    peak = (reference.busbw_gbs if reference else 24.0) * 0.97
    sizes = []
    size = 2**20
    while size <= max_mib * 2**20:
        busbw = peak * size / (size + 48 * 2**20)
        algbw = busbw * world / (2 * (world - 1))
        sizes.append(
            {
                "bytes": size,
                "time_us": round(size / (algbw * 1e3), 1),
                "algbw_gbs": round(algbw, 2),
                "busbw_gbs": round(busbw, 2),
            }
        )
        size *= 2
        out.wait(0.05)
    out.emit("allreduce", world_size=world, backend="nccl", sizes=sizes)


def dataload(out: Stream, path: str) -> None:
    out.wait(0.5)
    out.emit(
        "dataload", path=path, disk_read_mb_s=2650.0, loader_images_per_s=5400.0, workers=8,
        pin_memory=True, batch_size=256, image_size=224,
    )  # fmt: skip


def torch_in(sandbox: Sandbox, env: str) -> tuple[str, str, str] | None:
    """(torch, torchvision, CUDA) in the environment (or site folder) at ``env``: what the
    simulation installed, else what the simulated machine came with, found as detection finds it."""
    installed = effects.installed_torch(sandbox, env)
    if installed is not None:
        return installed, "0.29.1", "13.0"
    host = sandbox_host(sandbox)
    found = read_torch_envs(host, read_interpreters(host))
    env_found = next((e for e in found if env in (e.path, e.site)), None)
    if env_found is None:
        return None
    return env_found.release, env_found.torchvision or "", env_found.torch_cuda or ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpuwizard.sim.bench_python")
    parser.add_argument("--env", required=True)
    known, rest = parser.parse_known_args(argv)
    if rest[:1] != [ISOLATED]:  # a real interpreter would search the caller's folder first
        sys.stderr.write(f"the environment's Python was started without {ISOLATED}\n")
        return 2
    rest = rest[1:]
    world = 1
    if rest[:2] == ["-m", "torch.distributed.run"]:
        world = int(next(a.split("=", 1)[1] for a in rest if a.startswith("--nproc-per-node=")))
        rest = rest[next(i for i, a in enumerate(rest) if a.endswith("gpu_worker.py")) :]
    worker = argparse.ArgumentParser()
    worker.add_argument("script")
    worker.add_argument("--modes", default=",".join(MODES))
    worker.add_argument("--batch-size")
    worker.add_argument("--batch-fitted", action="append", default=[])
    worker.add_argument("--device", default="cuda")
    worker.add_argument("--allreduce", action="store_true")
    worker.add_argument("--allreduce-max-mib", type=int, default=256)
    worker.add_argument("--dataload")
    worker.add_argument("--compile", action="store_true")
    args, _ = worker.parse_known_args(rest)

    sandbox = Sandbox(Path(os.environ[SIM_ENV]))
    out = Stream(float(os.environ.get(PACE_ENV, "1")))
    stack = torch_in(sandbox, known.env)
    if stack is None:
        sys.stderr.write(f"ModuleNotFoundError: No module named 'torch' ({known.env})\n")
        return 2
    gpus = sim_gpus(sandbox)
    modes: list[Mode] = [m for m in MODES if m in args.modes.split(",")]
    out.emit(
        "started", torch=stack[0], torchvision=stack[1], cuda=stack[2], device="cuda", world_size=world,
        backend="nccl" if world > 1 else None, model="resnet50", image_size=224, modes=modes,
        python="3.12.3", compiled=args.compile, channels_last=True,
        gpus=[{"index": i, "name": f"NVIDIA {g.model.name}", "capability": g.model.compute_capability or "0.0",
               "memory_mib": int((g.model.memory_gib or 16) * 1024)} for i, g in enumerate(gpus[:world])],
    )  # fmt: skip
    if "nvidia" not in loaded_modules(sandbox):
        message = "torch.cuda.is_available() is False: the NVIDIA driver is not loaded"
        out.emit("error", mode=None, error="environment", message=message)
        out.emit("finished", ok=False, seconds=out.t)
        return 2
    fitted = dict(given.split("=", 1) for given in args.batch_fitted)
    for mode in modes:
        guess = 256 if mode_class(mode) == "amp" else 128  # the worker's guess on 40 GiB or more
        train(out, gpus, mode, world, int(args.batch_size or fitted.get(mode) or guess))
    if args.allreduce and world > 1:
        allreduce(out, gpus, world, sim_has_nvswitch(sandbox), args.allreduce_max_mib)
    if args.dataload:
        dataload(out, args.dataload)
    out.emit("finished", ok=True, seconds=out.t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
