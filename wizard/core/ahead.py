"""What to fetch ahead while earlier steps run: derived from the reviewed plan, cache only.

A fresh setup waits on three slow things: the driver (its download, then the DKMS build), the
reboot, and 3-4 GiB of PyTorch wheels. Once the install has started, the runner fetches what
later steps will download (runner/prefetch.py runs it, beside the step that runs):

- a later ``apt-get install``'s packages go into apt's own cache (``AptPrefetch``), each
  checked against apt's signed index on the way in, and apt installs them without a download;
- a later ``uv pip install`` fills uv's cache (``UvPrefetch``, the same hashes file), from where
  the step links the wheels in a fraction of a second;
- a later download into gpuwizard's download folder is made there now, checked against its pin
  (``gpuwizard-fetch`` keeps a file already there that matches it).

Nothing here changes the system: caches only, each item re-runnable, and a failed one costs
nothing (its step downloads as it always did). Two limits, each for a reason:

- packages of a step that comes after a step adding a package source (the CUDA repository,
  non-free) wait until that step is done: apt cannot name them before;
- dnf's packages are not fetched ahead: whether ``dnf --downloadonly`` beside a running
  ``dnf install`` would hold it up on dnf's lock, as apt's ``--download-only`` does apt's, is not
  established (no Rocky root here to try it; see docs/decisions.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass

from gpuwizard.core.ops import (
    AptInstall,
    AptPrefetch,
    Download,
    Prefetch,
    UvPipInstall,
    UvPrefetch,
    WriteFile,
)
from gpuwizard.core.paths import DOWNLOADS_DIR
from gpuwizard.core.plan import Action, Plan, StepPlan

AHEAD_DIR = f"{DOWNLOADS_DIR}/ahead"
"""Where what a later step runs from is fetched to (uv), and uv's scratch target."""
UV_TARGET = f"{AHEAD_DIR}/uv-target"
RESOLVER = "/usr/bin/python3"
"""The interpreter uv resolves with before the environment exists (every supported OS has it,
cloud-init and the package managers need it); ``--python-version`` gives the environment's."""
SOURCES = ("/etc/apt/", "/etc/yum.repos.d/")
AHEAD_MARK = "GPUWIZARD_AHEAD"
"""Set to 1 in the environment of every command run to fetch ahead: ps, and the simulation's
call log, tell them from the steps' own."""

AheadOp = Download | WriteFile | Prefetch


@dataclass(frozen=True)
class AheadItem:
    """What one later step's downloads become when fetched ahead, in order."""

    step: str
    ops: tuple[AheadOp, ...]

    @property
    def what(self) -> str:
        """What it fetches, in a person's words."""
        parts = []
        for op in self.ops:
            match op:
                case AptPrefetch():
                    parts.append(", ".join(op.packages))
                case UvPrefetch() if op.hashes_file and "/pip-" in op.hashes_file:
                    parts.append("pip")
                case UvPrefetch():
                    parts.append(
                        "PyTorch's wheels" if op.hashes_file else ", ".join(op.requirements)
                    )
                case Download() if op.dest.startswith(DOWNLOADS_DIR + "/") and not _ahead(op):
                    parts.append(op.dest.rsplit("/", 1)[-1])
                case _:
                    pass
        return "; ".join(parts)


def _ahead(op: Download) -> bool:
    return op.dest.startswith(AHEAD_DIR + "/")


def in_cache(path: str) -> bool:
    return path.startswith(DOWNLOADS_DIR + "/")


def ahead_path(path: str) -> str:
    return f"{AHEAD_DIR}/{path.rsplit('/', 1)[-1]}"


def ahead_ops(actions: tuple[Action, ...], python_version: str) -> tuple[AheadOp, ...]:
    """A step's actions as fetched ahead; empty when it downloads nothing that can be."""
    runs_uv = {a.uv for a in actions if isinstance(a, UvPipInstall)}
    ops: list[AheadOp] = []
    for action in actions:
        match action:
            case AptInstall():
                ops.append(AptPrefetch(action.packages, action.recommends))
            case UvPipInstall():
                ops.append(
                    UvPrefetch(
                        ahead_path(action.uv),
                        RESOLVER,
                        python_version,
                        UV_TARGET,
                        action.requirements,
                        action.index_url,
                        action.hashes_file,
                    )
                )
            case Download() if action.dest in runs_uv:  # the uv it runs: fetched to the cache
                ops.append(dataclasses.replace(action, dest=ahead_path(action.dest)))
            case Download() if in_cache(action.dest):
                ops.append(action)
            case WriteFile() if in_cache(action.path):
                ops.append(action)  # the hashes file a later uv reads
            case _:
                pass
    fetching = any(isinstance(op, (AptPrefetch, UvPrefetch)) or (
        isinstance(op, Download) and not _ahead(op)) for op in ops)  # fmt: skip
    return tuple(ops) if fetching else ()


def adds_sources(step: StepPlan) -> bool:
    """Whether a step adds or changes a package source: what apt can name changes after it."""
    return any(isinstance(a, WriteFile) and a.path.startswith(SOURCES) for a in step.actions)


def ahead(
    plan: Plan,
    done: Collection[str],
    started: Collection[str],
    python_version: str,
    *,
    next_runs: bool,
) -> tuple[AheadItem, ...]:
    """What to fetch for the steps not started yet.

    ``done``: the steps finished (or left); ``started``: those too, and the one running now.
    ``next_runs``: the first step not started is about to run and downloads for itself (the
    runner asks before a step; while one runs, the next is fair game). A step's packages wait
    while a step before it that adds a package source is not done. Each item is whole (two that
    run uv each fetch it); the fetching process fetches an op only once a round.
    """
    todo = [s for s in plan.steps if s.id not in started and not s.satisfied]
    items: list[AheadItem] = []
    for step in todo[1:] if next_runs else todo:
        before = plan.steps[: plan.steps.index(step)]
        sources_change = any(adds_sources(s) for s in before if s.id not in done)
        ops = tuple(
            op
            for op in ahead_ops(step.actions, python_version)
            if not (sources_change and isinstance(op, AptPrefetch))
        )
        if any(not isinstance(op, WriteFile) for op in ops):
            items.append(AheadItem(step.id, ops))
    return tuple(items)
