"""Published ResNet-50 training and NCCL all-reduce numbers (references.yaml), looked up by GPU.

Pure data: loading checks every row (codec) and that every row's source is declared, so a typo
fails the tests, not a user's benchmark screen.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

from gpuwizard.bench.protocol import Mode
from gpuwizard.core.codec import from_jsonable

ModeClass = Literal["amp", "tf32", "fp32"]
Kind = Literal["pytorch", "mlperf", "guide"]


@dataclass(frozen=True)
class TrainReference:
    match: tuple[str, ...]
    mode: ModeClass
    gpus: int
    images_per_s: float
    kind: Kind
    source: str
    note: str = ""

    @property
    def per_gpu(self) -> float:
        return self.images_per_s / self.gpus


@dataclass(frozen=True)
class AllReduceReference:
    match: tuple[str, ...]
    fabric: Literal["nvswitch", "pcie"]
    gpus: int
    busbw_gbs: float
    source: str


@dataclass(frozen=True)
class References:
    sources: dict[str, str]
    train: tuple[TrainReference, ...]
    allreduce: tuple[AllReduceReference, ...]

    def train_for(self, gpu_name: str, mode: Mode) -> list[TrainReference]:
        """Rows for this GPU model and mode, best per GPU first."""
        rows = [r for r in self.train if matches(r.match, gpu_name) and r.mode == mode_class(mode)]
        return sorted(rows, key=lambda r: (-r.per_gpu, r.gpus))

    def allreduce_for(self, gpu_name: str, nvswitch: bool) -> AllReduceReference | None:
        fabric = "nvswitch" if nvswitch else "pcie"
        rows = [r for r in self.allreduce if r.fabric == fabric and matches(r.match, gpu_name)]
        return max(rows, key=lambda r: len(r.match), default=None)

    def describe(self, key: str) -> str:
        return self.sources[key]


def mode_class(mode: Mode) -> ModeClass:
    """Published numbers say "AMP" for fp16 and bf16 alike (same tensor peak)."""
    return "amp" if mode.startswith("amp") else "tf32" if mode == "tf32" else "fp32"


def matches(words: tuple[str, ...], gpu_name: str) -> bool:
    name = gpu_name.lower()
    return all(word in name for word in words)


@functools.cache
def load_references(path: Path | None = None) -> References:
    data = yaml.safe_load((path or Path(__file__).with_name("references.yaml")).read_text())
    references = from_jsonable(References, data)
    used = {r.source for r in references.train} | {r.source for r in references.allreduce}
    if undeclared := sorted(used - set(references.sources)):
        raise ValueError(f"references.yaml: source {undeclared[0]!r} is not declared")
    return references
