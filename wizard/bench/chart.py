"""What the benchmark chart draws: images/s per GPU over the benchmark's elapsed seconds, one
series per mode (and per GPU count for DDP), and the published number each is compared with.

Pure: events in, points and reference marks out. The reference a series is drawn against is a
published PyTorch figure for this GPU model in the series' mode class *and GPU count*; where only
another count was published, the mark says it is scaled and how (per GPU, which is what perfect
scaling keeps). It never shows a figure for another GPU model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuwizard.bench import protocol as bp
from gpuwizard.bench.references import References, TrainReference

SERIES_ORDER = ("fp32", "tf32", "amp-fp16", "amp-bf16")


def series_key(mode: str, world_size: int) -> str:
    return mode if world_size == 1 else f"{mode} x{world_size}"


@dataclass(frozen=True)
class ReferenceMark:
    """A published figure drawn as a line across the chart, per GPU."""

    key: str
    """The series it is compared with."""
    per_gpu: float
    label: str
    """Whose figure, on how many GPUs, and how it was scaled if it was."""
    scaled: bool
    source: str = ""
    """Whose figure, in a few words."""
    how: str = ""
    """How it was scaled ("" when it was not)."""


def reference_for(
    references: References, gpu_name: str, mode: str, world_size: int
) -> ReferenceMark | None:
    """The published PyTorch figure for this GPU model, mode and GPU count (the best per GPU);
    else the nearest other count's per-GPU figure, marked as scaled to this count."""
    rows = [r for r in references.train_for(gpu_name, mode) if r.kind == "pytorch"]  # type: ignore[arg-type]
    if not rows:
        return None
    key = series_key(mode, world_size)
    same = [r for r in rows if r.gpus == world_size]
    if same:
        row = max(same, key=lambda r: r.per_gpu)
        label = f"{key}: {_whose(references, row)}"
        return ReferenceMark(key, row.per_gpu, label, False, _source(references, row))
    row = min(rows, key=lambda r: (abs(r.gpus - world_size), -r.per_gpu))
    gpus = _gpus(world_size)
    how = (
        f"scaled from {row.gpus} GPU{'s' if row.gpus > 1 else ''} to {gpus} at the same "
        f"images/s per GPU (no published {gpus} figure)"
    )
    label = f"{key}: {_whose(references, row)}, {how}"
    short = f"{key}: the {_gpus(row.gpus)} figure at {world_size} (none published for {world_size})"
    return ReferenceMark(key, row.per_gpu, label, True, _source(references, row), short)


def _gpus(count: int) -> str:
    return f"{count} GPU{'s' if count > 1 else ''}"


def _source(references: References, row: TrainReference) -> str:
    """The source's name: its description up to the first comma or colon."""
    return references.describe(row.source).split(",")[0].split(":")[0]


def _whose(references: References, row: TrainReference) -> str:
    return f"{row.per_gpu:,.0f}/GPU published ({_source(references, row)}, {_gpus(row.gpus)})"


@dataclass
class ChartData:
    """The series so far; each worker's clock continues where the previous one's ended."""

    series: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    offset: float = 0.0
    elapsed: float = 0.0

    def take(self, event: bp.BenchEvent | str) -> bool:
        """Fold one event in; True when the chart changed."""
        if isinstance(event, bp.Started):
            self.offset = self.elapsed
            return False
        if not isinstance(event, bp.Sample):
            return False
        x = self.offset + event.t
        self.elapsed = max(self.elapsed, x)
        key = series_key(event.mode, event.world_size)
        self.series.setdefault(key, []).append((x, event.images_per_s / event.world_size))
        return True

    @property
    def top(self) -> float:
        return max((y for points in self.series.values() for _, y in points), default=0.0)
