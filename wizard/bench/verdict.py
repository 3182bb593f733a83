"""How a benchmark result compares with the published numbers, and why it may be low.

Pure: the benchmark's events, the GPU model and what NVML saw during the run go in; comparison
lines, a verdict per result and the likely causes come out. The bar is the best published
*PyTorch* number for the GPU and mode (per GPU); MLPerf's fused-kernel numbers are shown as the
ceiling eager PyTorch does not reach, and the guide's own table for contrast.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import median
from typing import Literal

from gpuwizard.bench.protocol import AllReduce, DataLoad, OutOfMemory, Result
from gpuwizard.bench.references import References, TrainReference
from gpuwizard.core.facts import NvmlOk
from gpuwizard.core.machine_words import counted

Level = Literal["good", "fair", "low", "poor", "unknown"]

KIND_LABEL = {"pytorch": "PyTorch", "mlperf": "MLPerf (fused kernels)", "guide": "the guide"}
DISK_MB_S_FOR_TRAINING = 1000.0
"""Below this a real-data run waits on the disk (NVMe reads 2,000+ MB/s)."""
PEAK_MESSAGE_BYTES = 4 * 2**30
"""Published all-reduce peaks come from messages this large or larger."""
LIMITS_SEEN_SHARE = 0.2
"""A clock limit counts when NVML reported it in at least this share of the samples."""


@dataclass(frozen=True)
class Comparison:
    result: Result
    bar: TrainReference | None
    """The best published PyTorch number per GPU for this GPU and mode, on 1 GPU or as many."""
    ratio: float | None
    level: Level
    line: str
    references: tuple[str, ...]
    """Every published number for this GPU and mode, one line each."""


@dataclass(frozen=True)
class Observed:
    """What NVML reported while the benchmark ran, reduced to what can explain a low result."""

    pcie_below_max: tuple[str, ...] = ()
    clock_limits: tuple[str, ...] = ()
    persistence_off: tuple[int, ...] = ()
    p2p_unavailable: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verdict:
    headline: str
    level: Level
    comparisons: tuple[Comparison, ...]
    notes: tuple[str, ...]
    """Scaling, all-reduce and data-loading findings."""
    causes: tuple[str, ...]
    """Likely causes, when something is low (or something NVML saw would make it so)."""


def level_of(ratio: float | None) -> Level:
    if ratio is None:
        return "unknown"
    return (
        "good" if ratio >= 0.95 else "fair" if ratio >= 0.75 else "low" if ratio >= 0.5 else "poor"
    )


def compare(result: Result, gpu_name: str, references: References) -> Comparison:
    rows = references.train_for(gpu_name, result.mode)
    pytorch = [r for r in rows if r.kind == "pytorch"]
    # Per GPU, against the same GPU count and against one GPU (perfect scaling): the higher bar.
    candidates = [r for r in pytorch if r.gpus in (1, result.world_size)]
    bar = max(candidates, key=lambda r: r.per_gpu, default=None)
    ratio = result.per_gpu / bar.per_gpu if bar else None
    where = f"{result.mode} on {result.world_size} GPU{'s' if result.world_size > 1 else ''}"
    ours = f"{result.per_gpu:,.0f} img/s per GPU (batch {result.batch_size})"
    if bar is None or ratio is None:
        line = f"{where}: {ours}; no published PyTorch number for {gpu_name} in this mode"
    else:
        line = (
            f"{where}: {ours}, {ratio:.2f}x the best published PyTorch number "
            f"({bar.per_gpu:,.0f}, {bar.note or references.describe(bar.source)})"
        )
    lines = tuple(reference_line(r, result.per_gpu) for r in rows)
    return Comparison(result, bar, ratio, level_of(ratio), line, lines)


def reference_line(row: TrainReference, ours_per_gpu: float) -> str:
    gpus = f"{row.gpus} GPU{'s' if row.gpus > 1 else ''}"
    note = f", {row.note}" if row.note else ""
    return (
        f"{KIND_LABEL[row.kind]}, {gpus}{note}: {row.per_gpu:,.0f}/GPU "
        f"(you: {ours_per_gpu / row.per_gpu:.2f}x)  [{row.source}]"
    )


@dataclass(frozen=True)
class Scaling:
    """A DDP result against one process in the same mode."""

    ddp: Result
    single: Result

    @property
    def speedup(self) -> float:
        """DDP images/s (every rank's batch at the slowest rank's pace) over one process's."""
        return self.ddp.images_per_s / self.single.images_per_s

    @property
    def efficiency(self) -> float:
        return self.speedup / self.ddp.world_size


def find_scaling(results: Sequence[Result]) -> Scaling | None:
    for ddp in (r for r in results if r.world_size > 1):
        single = next((r for r in results if r.world_size == 1 and r.mode == ddp.mode), None)
        if single is not None and single.images_per_s > 0:
            return Scaling(ddp, single)
    return None


def scaling_note(results: Sequence[Result]) -> tuple[str | None, Level]:
    """DDP against one GPU in the same mode: the public norm is >= 97.5% (7.8x of 8)."""
    scaling = find_scaling(results)
    if scaling is None:
        return None, "unknown"
    efficiency = scaling.efficiency
    level: Level = "good" if efficiency >= 0.975 else "fair" if efficiency >= 0.93 else "low"
    return (
        f"DDP over {scaling.ddp.world_size} GPUs ({scaling.ddp.mode}): {scaling.speedup:.2f}x one GPU "
        f"({efficiency:.1%} scaling; public runs reach 97.5-99.4%)",
        level,
    )


def cpu_scaling_note(results: Sequence[Result]) -> str | None:
    """The CPU check of the multi-process path; never compared with any GPU number."""
    scaling = find_scaling(results)
    if scaling is None:
        return None
    ddp = scaling.ddp
    ranks = ", ".join(f"rank {rank} {rate:,.1f}" for rank, rate in enumerate(ddp.per_rank))
    return (
        f"CPU check of the multi-process path: DDP over {ddp.world_size} processes on gloo "
        f"({ddp.mode}) ran {scaling.speedup:.2f}x one process, {scaling.efficiency:.1%} scaling"
        + (f" (img/s per process: {ranks})" if ranks else "")
        + "; it tests the benchmark's DDP code on this CPU, not a GPU server, and is never "
        "compared with GPU numbers"
    )


def allreduce_note(
    event: AllReduce, gpu_name: str, nvswitch: bool, references: References
) -> tuple[str, Level]:
    peak = max(event.sizes, key=lambda s: s.busbw_gbs)
    bucket = min(event.sizes, key=lambda s: abs(s.bytes - 32 * 2**20))
    text = (
        f"all-reduce over {event.world_size} ({event.backend}): peak bus bandwidth "
        f"{peak.busbw_gbs:,.1f} GB/s at {peak.bytes / 2**20:,.0f} MiB; "
        f"{bucket.busbw_gbs:,.1f} GB/s at {bucket.bytes / 2**20:,.0f} MiB (DDP's bucket size)"
    )
    reference = references.allreduce_for(gpu_name, nvswitch)
    if reference is None or event.world_size < 2:
        return text, "unknown"
    ratio = peak.busbw_gbs / reference.busbw_gbs
    text += f"; published {reference.busbw_gbs:,.0f} GB/s for {reference.gpus} GPUs: {ratio:.2f}x"
    largest = max(s.bytes for s in event.sizes)
    if largest < PEAK_MESSAGE_BYTES:
        stopped = f"{largest / 2**20:,.0f} MiB"
        text += f" (the published peak needs messages of 4 GiB and more; this test stopped at {stopped})"
        return text, "unknown"
    return text, level_of(ratio) if event.world_size == reference.gpus else "unknown"


def dataload_notes(event: DataLoad, training_images_per_s: float) -> tuple[list[str], list[str]]:
    """(notes, causes) about feeding real data at the speed the GPUs train."""
    notes = [
        f"dataset disk ({event.path}): {event.disk_read_mb_s:,.0f} MB/s cold sequential read",
        f"DataLoader ({event.workers} workers, pinned memory {'on' if event.pin_memory else 'off'}, "
        f"np.memmap, {event.image_size}px): {event.loader_images_per_s:,.0f} img/s",
    ]
    causes = []
    if event.disk_read_mb_s < DISK_MB_S_FOR_TRAINING:
        causes.append(
            f"the dataset disk reads {event.disk_read_mb_s:,.0f} MB/s: real-data training will "
            "wait on it (local NVMe reads 2,000 MB/s and more)"
        )
    if training_images_per_s and event.loader_images_per_s < training_images_per_s:
        causes.append(
            f"the DataLoader delivers {event.loader_images_per_s:,.0f} img/s, fewer than the GPUs "
            f"train ({training_images_per_s:,.0f} img/s): with real data, add workers, "
            "pre-decode the images, or use DALI"
        )
    return notes, causes


def observe(samples: Sequence[NvmlOk]) -> Observed:
    """Reduce NVML readings taken during the run to what can explain a low result."""
    if not samples:
        return Observed()
    best_link: dict[int, tuple[int, int]] = {}
    limits: Counter[tuple[int, str]] = Counter()
    for sample in samples:
        for gpu in sample.gpus:
            link = (gpu.pcie_gen_current or 0, gpu.pcie_width_current or 0)
            best_link[gpu.index] = max(best_link.get(gpu.index, (0, 0)), link)
            limits.update((gpu.index, reason) for reason in gpu.clock_limits)
    last = samples[-1]
    below = []
    for gpu in last.gpus:
        gen, width = best_link.get(gpu.index, (0, 0))
        most = (gpu.pcie_gen_max or 0, gpu.pcie_width_max or 0)
        if gen and width and all(most) and (gen < most[0] or width < most[1]):
            below.append(
                f"GPU {gpu.index} ran at PCIe Gen{gen} x{width}; it can do Gen{most[0]} x{most[1]}"
            )
    seen = [
        f"GPU {index}: {reason}"
        for (index, reason), count in sorted(limits.items())
        if count >= LIMITS_SEEN_SHARE * len(samples)
    ]
    return Observed(
        pcie_below_max=tuple(below),
        clock_limits=tuple(seen),
        persistence_off=tuple(g.index for g in last.gpus if g.persistence_mode is False),
        p2p_unavailable=last.p2p_unavailable,
    )


def observed_causes(observed: Observed) -> list[str]:
    causes = [
        f"{line}: check the slot, riser and BIOS PCIe settings" for line in observed.pcie_below_max
    ]
    for line in observed.clock_limits:
        if "power cap" in line:
            causes.append(
                f"{line} (normal at full load unless the limit was lowered: nvidia-smi -q -d POWER)"
            )
        else:
            causes.append(f"{line}: the GPU slowed itself down; check cooling and power delivery")
    if observed.persistence_off:
        gpus = ", ".join(str(i) for i in observed.persistence_off)
        causes.append(
            f"persistence mode is off on GPU {gpus}: the driver sets each GPU up again on every "
            "start (enable nvidia-persistenced)"
        )
    if observed.p2p_unavailable:
        causes.append(
            f"no peer-to-peer between GPUs {', '.join(observed.p2p_unavailable)}: their traffic "
            "goes through host memory (IOMMU or PCIe ACS, common in VMs), slowing all-reduce"
        )
    return causes


def judge(
    *,
    device: str,
    gpu_name: str,
    results: Sequence[Result],
    references: References,
    allreduce: AllReduce | None = None,
    dataload: DataLoad | None = None,
    ooms: Sequence[OutOfMemory] = (),
    observed: Observed = Observed(),
    nvswitch: bool = False,
) -> Verdict:
    if device == "cpu":
        return cpu_verdict(results, allreduce)
    comparisons = tuple(compare(r, gpu_name, references) for r in results)
    notes: list[str] = []
    levels = [c.level for c in comparisons]
    scaling, scaling_level = scaling_note(results)
    if scaling:
        notes.append(scaling)
        levels.append(scaling_level)
    if allreduce is not None and allreduce.sizes:
        text, level = allreduce_note(allreduce, gpu_name, nvswitch, references)
        notes.append(text)
        levels.append(level)
    causes = observed_causes(observed)
    if dataload is not None:
        best = max((r.images_per_s for r in results), default=0.0)
        more_notes, more_causes = dataload_notes(dataload, best)
        notes += more_notes
        causes += more_causes
    for mode, sizes in _backoffs(ooms).items():
        causes.append(
            f"{mode}: out of memory at batch {sizes[0]}, ran at {sizes[-1]}: is another process "
            "using the GPU (nvidia-smi)?"
            if len(sizes) > 1 and sizes[-1] < 64
            else f"{mode}: batch {sizes[0]} did not fit; backed off to {sizes[-1]}"
        )
    throughput = _worst([c.level for c in comparisons])
    overall = _worst(levels)
    headline = _headline(throughput, comparisons)
    if _rank(overall) < _rank(throughput) and throughput != "unknown":
        headline += "; but multi-GPU is lower than it should be (below)"
    return Verdict(headline, overall, comparisons, tuple(notes), tuple(causes))


def cpu_verdict(results: Sequence[Result], allreduce: AllReduce | None) -> Verdict:
    """A CPU run checks the benchmark's own code paths; no published number applies to it."""
    notes = [
        f"{r.mode} on {counted(r.world_size, 'process', 'processes')}: {r.images_per_s:,.1f} img/s (CPU)"
        for r in results
    ]
    if (scaling := cpu_scaling_note(results)) is not None:
        notes.append(scaling)
    if allreduce is not None and allreduce.sizes:
        peak = max(allreduce.sizes, key=lambda s: s.busbw_gbs)
        notes.append(
            f"all-reduce over {allreduce.world_size} CPU processes ({allreduce.backend}): "
            f"{peak.busbw_gbs:,.2f} GB/s bus bandwidth at {peak.bytes / 2**20:,.0f} MiB (a CPU check)"
        )
    return Verdict(
        "CPU run: it checks the benchmark itself, not a GPU server; no published number applies",
        "unknown",
        (),
        tuple(notes),
        (),
    )


def _worst(levels: Sequence[Level]) -> Level:
    known = [level for level in levels if level != "unknown"]
    return min(known, key=_rank) if known else "unknown"


def _rank(level: Level) -> int:
    return ("poor", "low", "fair", "good").index(level) if level != "unknown" else 4


def _backoffs(ooms: Sequence[OutOfMemory]) -> dict[str, list[int]]:
    sizes: dict[str, list[int]] = {}
    for oom in ooms:
        sizes.setdefault(oom.mode, []).append(oom.batch_size)
        if oom.next is not None:
            sizes[oom.mode].append(oom.next)
    return sizes


def stopped(verdict: Verdict) -> Verdict:
    """The verdict of a run stopped before its end: it says so first, then what ran showed."""
    if not any(c.ratio is not None for c in verdict.comparisons):
        headline = (
            "Stopped before the end: nothing that ran was compared with a published figure "
            "(the table has what ran)"
        )
    else:
        headline = (
            f"Stopped before the end. So far: {verdict.headline[0].lower()}{verdict.headline[1:]}"
        )
    return replace(verdict, headline=headline)


def _headline(level: Level, comparisons: Sequence[Comparison]) -> str:
    ratios = [c.ratio for c in comparisons if c.ratio is not None]
    if not ratios:
        return "No published numbers for this GPU to compare with; the results stand on their own"
    typical = median(ratios)
    return {
        "good": f"At or above the best published PyTorch numbers for this GPU ({typical:.2f}x)",
        "fair": f"Close to the best published PyTorch numbers ({typical:.2f}x): worth a look below",
        "low": f"Below the published PyTorch numbers ({typical:.2f}x): see the likely causes",
        "poor": f"Far below the published PyTorch numbers ({typical:.2f}x): something is wrong",
        "unknown": "No published numbers to compare with",
    }[level]
