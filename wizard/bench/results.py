"""A finished benchmark as the user keeps it: results.json (for export and tools) and results.md
(to paste into a ticket), written beside the raw stream in the run's folder (0600 in 0700)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwizard.bench.files import make_private_dir, private_text
from gpuwizard.bench.protocol import (
    AllReduce,
    BenchEvent,
    DataLoad,
    OutOfMemory,
    ProtocolError,
    Result,
    Skipped,
    Started,
    parse_line,
)
from gpuwizard.bench.references import mode_class
from gpuwizard.bench.verdict import Verdict
from gpuwizard.core.codec import to_jsonable
from gpuwizard.core.machine_words import counted

RESULTS_SCHEMA = 1


@dataclass(frozen=True)
class BenchSummary:
    """A finished (or stopped) benchmark: the verdict and where its files are."""

    verdict: Verdict
    results_json: Path
    results_md: Path
    problems: tuple[str, ...]
    cancelled: bool


@dataclass(frozen=True)
class Collected:
    """The events of a whole job, sorted by what they are."""

    started: tuple[Started, ...]
    results: tuple[Result, ...]
    skipped: tuple[Skipped, ...]
    ooms: tuple[OutOfMemory, ...]
    allreduce: AllReduce | None
    dataload: DataLoad | None

    @property
    def device(self) -> str:
        return self.started[0].device if self.started else "unknown"


def collect(events: Sequence[BenchEvent]) -> Collected:
    return Collected(
        started=tuple(e for e in events if isinstance(e, Started)),
        results=tuple(e for e in events if isinstance(e, Result)),
        skipped=tuple(e for e in events if isinstance(e, Skipped)),
        ooms=tuple(e for e in events if isinstance(e, OutOfMemory)),
        allreduce=next((e for e in events if isinstance(e, AllReduce)), None),
        dataload=next((e for e in events if isinstance(e, DataLoad)), None),
    )


def results_json(
    collected: Collected, verdict: Verdict, gpu: str, problems: Sequence[str], when: float
) -> dict[str, Any]:
    first = collected.started[0] if collected.started else None
    return {
        "schema": RESULTS_SCHEMA,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(when)),
        "gpu": gpu,
        "device": collected.device,
        "environment": None
        if first is None
        else {
            "torch": first.torch,
            "torchvision": first.torchvision,
            "cuda": first.cuda,
            "python": first.python,
            "model": first.model,
            "image_size": first.image_size,
            "channels_last": first.channels_last,
            "compiled": first.compiled,
        },
        "results": to_jsonable(collected.results),
        "skipped": to_jsonable(collected.skipped),
        "allreduce": to_jsonable(collected.allreduce),
        "dataload": to_jsonable(collected.dataload),
        "verdict": {
            "headline": verdict.headline,
            "level": verdict.level,
            "comparisons": [
                {
                    "mode": c.result.mode,
                    "gpus": c.result.world_size,
                    "ratio": c.ratio,
                    "level": c.level,
                    "line": c.line,
                }
                for c in verdict.comparisons
            ],
            "notes": list(verdict.notes),
            "causes": list(verdict.causes),
        },
        "problems": list(problems),
    }


def results_markdown(
    collected: Collected, verdict: Verdict, gpu: str, problems: Sequence[str], when: float
) -> str:
    first = collected.started[0] if collected.started else None
    day = time.strftime("%Y-%m-%d %H:%M", time.localtime(when))
    lines = [f"# gpuwizard benchmark: {gpu}, {day}", ""]
    if first is not None:
        cuda = f"CUDA {first.cuda}" if first.cuda else "CPU build"
        layout = "channels_last" if first.channels_last else "NCHW"
        compiled = ", torch.compile" if first.compiled else ""
        lines += [
            f"torch {first.torch} ({cuda}), torchvision {first.torchvision}, Python {first.python}; "
            f"{first.model} at {first.image_size}px, {layout}{compiled}, synthetic data on the "
            f"{'GPU' if first.device == 'cuda' else 'CPU'}",
            "",
        ]
    lines += [f"**{verdict.headline}**", ""]
    ratios = {(c.result.mode, c.result.world_size): c.ratio for c in verdict.comparisons}
    lines += [
        "| mode | GPUs | batch per GPU | img/s | img/s per GPU | vs best PyTorch |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in collected.results:
        ratio = ratios.get((r.mode, r.world_size))
        versus = f"{ratio:.2f}x" if ratio is not None else "n/a"
        lines.append(
            f"| {r.mode} | {r.world_size} | {r.batch_size} | {r.images_per_s:,.0f} | "
            f"{r.per_gpu:,.0f} | {versus} |"
        )
    for s in collected.skipped:
        lines.append(f"| {s.mode} | | | skipped: {s.reason} | | |")
    for title, items in (
        ("Notes", verdict.notes),
        ("Likely causes", verdict.causes),
        ("Problems", tuple(problems)),
        ("Published numbers", published_lines(verdict)),
    ):
        if items:
            lines += ["", f"## {title}", "", *(f"- {item}" for item in dict.fromkeys(items))]
    return "\n".join(lines) + "\n"


def published_lines(verdict: Verdict) -> tuple[str, ...]:
    """Each mode class's published numbers once, against this run's one-GPU result."""
    shown: dict[str, tuple[str, ...]] = {}
    for c in sorted(verdict.comparisons, key=lambda c: c.result.world_size):
        shown.setdefault(mode_class(c.result.mode), c.references)
    return tuple(f"{group}: {line}" for group, lines in shown.items() for line in lines)


def save(
    directory: Path,
    events: Sequence[BenchEvent],
    verdict: Verdict,
    gpu: str,
    problems: Sequence[str],
    when: float | None = None,
) -> tuple[Path, Path]:
    """Write results.json and results.md into the run's folder; returns their paths."""
    when = time.time() if when is None else when
    collected = collect(events)
    data = results_json(collected, verdict, gpu, problems, when)
    make_private_dir(directory)
    json_path, md_path = directory / "results.json", directory / "results.md"
    with private_text(json_path) as out:
        out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    with private_text(md_path) as out:
        out.write(results_markdown(collected, verdict, gpu, problems, when))
    return json_path, md_path


@dataclass(frozen=True)
class Interrupted:
    """A benchmark run that never wrote its results: its terminal closed, or it was killed."""

    folder: Path
    results: tuple[Result, ...]
    """The modes it had finished."""

    def sentence(self) -> str:
        started = _stamp_words(self.folder.name)
        done = "; ".join(
            f"{r.mode} on {counted(r.world_size, 'GPU')} {r.images_per_s:,.0f} img/s"
            for r in self.results
        )
        measured = f" It had measured: {done}." if done else " It had measured nothing yet."
        return (
            f"The last benchmark (started {started}) was interrupted before its end: its terminal "
            f"closed or it was stopped.{measured} Its files are in {self.folder}."
        )


def last_interrupted(state_dir: Path) -> Interrupted | None:
    """The newest benchmark run under ``state_dir`` when it never wrote its results."""
    runs = sorted(p.parent for p in (state_dir / "bench").glob("*/stream.jsonl"))
    if not runs or (runs[-1] / "results.json").exists():
        return None
    newest = runs[-1]
    try:
        lines = (newest / "stream.jsonl").read_text("utf-8", "replace").splitlines()
    except OSError:
        lines = []
    events: list[BenchEvent] = []
    for line in lines:
        with contextlib.suppress(ProtocolError):
            events.append(parse_line(line))
    return Interrupted(newest, collect(events).results)


def _stamp_words(stamp: str) -> str:
    """ "20261204-223100" -> "2026-12-04 22:31" (as it is when it is not one)."""
    try:
        return time.strftime("%Y-%m-%d %H:%M", time.strptime(stamp, "%Y%m%d-%H%M%S"))
    except ValueError:
        return stamp
