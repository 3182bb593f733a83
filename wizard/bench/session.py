"""One benchmark as a front end drives it: start, follow, stop, then judge and save.

The TUI's Benchmark screen and ``gpuwizard bench`` both use this; the screen sees it through the
``BenchSource`` protocol (screens/capabilities.py), so it never touches the process.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gpuwizard.bench.launch import BenchJob, BenchSpec, results_dir
from gpuwizard.bench.protocol import BenchEvent
from gpuwizard.bench.references import load_references
from gpuwizard.bench.results import BenchSummary, collect, save
from gpuwizard.bench.verdict import judge, observe, stopped
from gpuwizard.core.facts import HostFacts, Nvml


def gpu_label(facts: HostFacts) -> tuple[str, int]:
    """(model name, count) of the GPUs to benchmark: the first model, as the references key."""
    gpus = facts.hardware.gpus
    return (gpus[0].model.name if gpus else "CPU", len(gpus))


class BenchSession:
    def __init__(
        self,
        spec: BenchSpec,
        state_dir: Path,
        facts: HostFacts,
        *,
        nvml: Callable[[], Nvml] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.spec = spec
        self.facts = facts
        self.directory = results_dir(state_dir)
        self.job = BenchJob(spec, self.directory, nvml=nvml, env=env)
        self.summary: BenchSummary | None = None

    @property
    def title(self) -> str:
        name, count = gpu_label(self.facts)
        return f"{count}x {name}" if self.spec.gpus else "CPU"

    def start(self) -> None:
        self.job.start()

    def poll(self) -> list[BenchEvent | str]:
        return self.job.poll()

    def running(self) -> bool:
        return self.job.running()

    def cancel(self) -> None:
        self.job.cancel()

    def finish(self) -> BenchSummary:
        """Judge and save what ran (call once the job has ended); the same summary after that."""
        if self.summary is None:
            outcome = self.job.wait()
            collected = collect(outcome.events)
            name, _ = gpu_label(self.facts)
            verdict = judge(
                device=collected.device
                if collected.started
                else ("cuda" if self.spec.gpus else "cpu"),
                gpu_name=name,
                results=collected.results,
                references=load_references(),
                allreduce=collected.allreduce,
                dataload=collected.dataload,
                ooms=collected.ooms,
                observed=observe(outcome.nvml),
                nvswitch=bool(self.facts.hardware.nvswitches),
            )
            if outcome.cancelled:
                verdict = stopped(verdict)
            problems = [
                *outcome.problems,
                *(["stopped before the end"] if outcome.cancelled else []),
            ]
            json_path, md_path = save(self.directory, outcome.events, verdict, self.title, problems)
            self.summary = BenchSummary(
                verdict, json_path, md_path, tuple(problems), outcome.cancelled
            )
        return self.summary
