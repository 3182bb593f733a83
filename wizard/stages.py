"""The wizard's stages: which screen each stage shows, and what its answer leads to.

Holds the wizard's state (facts, choices, recommendation, plan) and folds each screen's answer
into it; gpuwizard.flow says where answers lead. Imported once the first frame is on screen, so
the wizard appears at once while the engine, planner and screens load.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from gpuwizard.bench.launch import BenchSpec, allreduce_max_mib
from gpuwizard.bench.session import BenchSession
from gpuwizard.export.formats import FORMATS, render
from gpuwizard.export.source import ALREADY_SET_UP, ExportSource
from gpuwizard.facts import HostFacts
from gpuwizard.flow import NEXT, Stage, StartState, after_install, start_stage
from gpuwizard.plan import Plan
from gpuwizard.planner import Options, OptionsError, plan_for
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.result import Choices, Recommendation, Refusal
from gpuwizard.recommend.sizing import assess
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import target_from_facts
from gpuwizard.runner import events as ev
from gpuwizard.runner.control import Backend, StartBusy, current
from gpuwizard.runner.files import write_files
from gpuwizard.runs import RunHandle
from gpuwizard.safetext import clean
from gpuwizard.screens.benchmark import BenchmarkScreen
from gpuwizard.screens.detect import DetectScreen
from gpuwizard.screens.done import DoneScreen
from gpuwizard.screens.export import ExportScreen
from gpuwizard.screens.install import InstallScreen
from gpuwizard.screens.reboot import RebootScreen
from gpuwizard.screens.recommend import Decision, RecommendScreen
from gpuwizard.screens.resume import ResumeScreen
from gpuwizard.screens.review import ReviewScreen
from gpuwizard.screens.verify import VerifyScreen
from gpuwizard.screens.waiting import Waiting
from gpuwizard.selection import Selection
from gpuwizard.setups import SetupError, exportable_setup
from gpuwizard.version import Version

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.app import App
    from textual.screen import Screen

T = TypeVar("T")

DEFAULT_ENV = "/opt/gpuwizard/envs/pytorch"
DATALOAD_DIR = "/var/tmp"
"""Where the data-loading check writes its scratch files: a disk datasets usually share."""

EXIT_MESSAGES = {
    "abort": "Install aborted. Finished steps stay done; run gpuwizard again to continue.",
    "reboot-later": "Reboot when ready (sudo reboot), log in again and run gpuwizard to continue.",
    "rebooting": "The machine is rebooting. Log in again and run gpuwizard to continue.",
}


class Wizard:
    """The stages, driven by screen answers; shows its screens through the Textual app it gets."""

    def __init__(self, app: App[str], backend: Backend, ssh_hint: str) -> None:
        self.app = app
        self.backend = backend
        self.handle = RunHandle(backend)
        self.table = load_table()
        self.ssh_hint = ssh_hint
        self.facts: HostFacts | None = None
        self.choices = Choices()
        self.options = Options()
        self.recommendation: Recommendation | Refusal | None = None
        self.plan: Plan | None = None
        self.selection: Selection | None = None
        self.bench: BenchSession | None = None
        self.exports: list[str] = []

    # ---------------------------------------------------------------------------- plumbing
    def switch_to(self, screen: Screen[T], callback: Callable[[T | None], None] | None) -> None:
        """Replace whatever stage is showing with the next one."""
        while len(self.app.screen_stack) > 1:
            self.app.pop_screen()
        self.app.push_screen(screen, callback)

    def finish(self, outcome: str) -> None:
        """Leave the wizard; the message is printed once the screen is gone."""
        self.app.exit(EXIT_MESSAGES.get(outcome, ""))

    def look(self) -> None:
        """Look at the machine (in a worker thread), then start where the machine stands."""
        facts = self.handle.facts()
        self.app.call_from_thread(self.start, facts)

    # ------------------------------------------------------------------------------ stages
    def start(self, facts: HostFacts) -> None:
        self.facts = facts
        state = current(self.backend.state_dir, facts.boot.boot_id)
        journal = state.journal.data if state.journal else None
        if journal is not None:
            self.plan, self.selection = journal.plan, journal.selection
        reboot = journal.reboot if journal else None
        start = StartState(
            runner=state.status,
            has_journal=journal is not None,
            finished=bool(journal and journal.finished),
            reboot_pending=reboot is not None,
            boot_changed=bool(
                reboot and facts.boot.boot_id and facts.boot.boot_id != reboot.boot_id_before
            ),
        )
        self.enter(start_stage(start), attach=state.status == "running")

    def enter(self, stage: Stage, attach: bool = False) -> None:
        handlers = {
            Stage.DETECT: self.show_detect,
            Stage.RECOMMEND: self.show_recommend,
            Stage.REVIEW: self.show_review,
            Stage.REBOOT: self.show_reboot,
            Stage.RESUME: self.show_resume,
            Stage.VERIFY: self.show_verify,
            Stage.BENCHMARK: self.show_benchmark,
            Stage.EXPORT: self.show_export,
            Stage.DONE: self.show_done,
        }
        if stage is Stage.INSTALL:
            self.show_install(attach)
        else:
            handlers[stage]()

    # ---------------------------------------------------------------------------- the stages
    def show_detect(self) -> None:
        assert self.facts is not None
        findings = assess(self.facts, self.table)
        screen = DetectScreen(self.facts, findings, can_continue=bool(self.facts.hardware.gpus))
        self.switch_to(
            screen, lambda answer: self.enter(Stage.RECOMMEND) if answer == "continue" else None
        )

    def recompute(self, choices: Choices, options: Options) -> Recommendation | Refusal:
        assert self.facts is not None
        return recommend(
            self.table,
            target_from_facts(self.facts, self.table),
            dataclasses.replace(choices, needs_nvcc=options.needs_nvcc),
        )

    def show_recommend(self) -> None:
        result = self.recompute(self.choices, self.options)
        versions = sorted(
            (r.version for r in self.table.torch_releases), key=Version.parse, reverse=True
        )
        screen = RecommendScreen(result, self.choices, self.options, self.recompute, versions)
        self.switch_to(screen, self.recommended)

    def recommended(self, decision: Decision | None) -> None:
        if decision is None:
            self.enter(Stage.DETECT)
            return
        assert self.facts is not None
        self.choices, self.options = decision.choices, decision.options
        try:
            self.selection, self.plan = plan_for(
                self.facts, decision.result, decision.options, self.table
            )
        except (OptionsError, ValueError) as error:
            self.app.notify(clean(str(error)), severity="error", markup=False)
            self.enter(Stage.RECOMMEND)
            return
        self.enter(Stage.REVIEW)

    def show_review(self) -> None:
        assert self.plan is not None
        self.switch_to(ReviewScreen(self.plan), self.reviewed)

    def reviewed(self, start: bool | None) -> None:
        if not start:
            self.enter(Stage.RECOMMEND)
            return
        assert self.plan is not None
        assert self.selection is not None
        assert self.facts is not None
        try:
            prepared = self.handle.prepare(self.plan, self.selection, self.facts)
        except StartBusy as error:
            self.app.notify(clean(str(error)), severity="error", timeout=10, markup=False)
            return
        if not prepared:  # another gpuwizard started a run meanwhile: show that one
            state = current(self.backend.state_dir, None)
            if state.journal is not None:
                self.plan, self.selection = state.journal.data.plan, state.journal.data.selection
            self.app.notify("Another gpuwizard started a run meanwhile; this shows that run.")
            self.enter(Stage.INSTALL, attach=True)
            return
        self.enter(Stage.INSTALL)

    def show_install(self, attach: bool) -> None:
        assert self.plan is not None
        self.switch_to(InstallScreen(self.plan, self.handle, attach), self.installed)

    def installed(self, outcome: str | None) -> None:
        if outcome == "abort":
            self.finish("abort")
            return
        self.enter(after_install(outcome or ""))

    def reboot_reason(self) -> str:
        state = current(self.backend.state_dir, None)
        if state.journal and state.journal.data.reboot:
            step = state.journal.data.record(state.journal.data.reboot.step)
            return step.reason or "a step asked for it"
        return "a step asked for it"

    def show_reboot(self) -> None:
        screen = RebootScreen(
            self.reboot_reason(), f"{self.ssh_hint}   then   gpuwizard", self.backend.simulated
        )
        self.switch_to(screen, self.reboot_answered)

    def reboot_answered(self, now: bool | None) -> None:
        if not now:
            self.finish("reboot-later")
            return
        self.handle.reboot()
        if self.backend.simulated:
            # The simulated machine is back at once: start up again, as after a real boot.
            self.switch_to(Waiting(), None)
            self.app.run_worker(
                self.look, thread=True, exclusive=True, group="detect", exit_on_error=False
            )
        else:
            self.finish("rebooting")

    def check_after_reboot(self) -> None:
        self.app.run_worker(
            self.check_after_reboot_blocking,
            thread=True,
            exclusive=True,
            group="resume",
            exit_on_error=False,
        )

    def check_after_reboot_blocking(self) -> None:
        """Run the runner's check-only pass and collect what it reports (in a worker thread)."""
        if not self.handle.start(one_step=False, check_only=True):
            why = f"the runner did not start; its output is in {self.backend.state_dir}/runner.log"
            self.app.call_from_thread(self.resumed_checked, [ev.RunStopped("no-runner", why)])
            return
        events: list[ev.RunEvent] = []
        while self.handle.running():
            events += self.handle.poll()
            time.sleep(0.1)
        events += self.handle.poll()
        self.app.call_from_thread(self.resumed_checked, events)

    def show_resume(self) -> None:
        self.switch_to(Waiting(), None)
        self.check_after_reboot()

    def resumed_checked(self, events: list[ev.RunEvent]) -> None:
        """Show what the check after the reboot found, from its events, and where we go on."""
        state = current(self.backend.state_dir, None)
        journal = state.journal.data if state.journal else None
        assert journal is not None
        assert self.plan is not None
        titles = {s.id: s.title for s in self.plan.steps}
        checked = [
            (titles.get(e.step, e.step), journal.record(e.step).state, e.reason)
            for e in events
            if isinstance(e, ev.StepFinished)
        ]
        stops = [e for e in events if isinstance(e, ev.RunStopped) and e.reason != "paused"]
        rebooted = any(isinstance(e, ev.RebootDetected) for e in events)
        satisfied = {s.id for s in self.plan.steps if s.satisfied}  # the runner skips these
        upcoming = next(
            (
                titles[r.id]
                for r in journal.steps
                if r.state in ("pending", "failed") and r.id not in satisfied
            ),
            None,
        )
        screen = ResumeScreen(
            checked, upcoming, rebooted=rebooted, problem=stops[0].why if stops else None
        )
        self.switch_to(screen, lambda _: self.enter(Stage.INSTALL))

    def show_verify(self) -> None:
        self.facts = facts = self.handle.facts()
        report = facts.installs.verification
        after = NEXT[Stage.VERIFY] if report and report.ok else Stage.DONE  # no torch: no benchmark
        self.switch_to(VerifyScreen(report), lambda _: self.enter(after))

    def show_benchmark(self) -> None:
        assert self.facts is not None
        host = self.backend.host()
        gpus = len(self.facts.hardware.gpus)
        memory = min((g.model.memory_gib or 0 for g in self.facts.hardware.gpus), default=0)
        spec = BenchSpec(
            python=self.backend.python_in(self.env_path),
            gpus=gpus,
            dataload_dir=DATALOAD_DIR,
            allreduce_max_mib=allreduce_max_mib(memory),
        )
        session = BenchSession(
            spec, self.backend.state_dir, self.facts, nvml=host.nvml, env=dict(self.backend.env)
        )
        self.bench = session
        self.switch_to(BenchmarkScreen(session, bench_about(gpus)), self.benchmarked)

    def benchmarked(self, outcome: str | None) -> None:
        if outcome == "again":
            self.show_benchmark()
            return
        self.enter(NEXT[Stage.BENCHMARK])

    def show_export(self) -> None:
        assert self.plan is not None
        assert self.selection is not None
        assert self.facts is not None
        source, note = ExportSource(self.plan, self.selection, self.facts), None
        if source.already_set_up:  # this run only verified: export the run that set it up
            try:
                setup = exportable_setup(self.backend.state_dir)
            except SetupError:
                setup = None
            if setup is not None:
                source, note = setup.source, setup.note
            else:
                note = ALREADY_SET_UP
        formats = [(f.name, f.title) for f in FORMATS.values()]
        screen = ExportScreen(
            formats,
            lambda name: render(source, name),
            lambda folder, files: write_files(folder, [(f.name, f.content, f.mode) for f in files]),
            str(Path.home() / "gpuwizard-export"),
            note[0].upper() + note[1:] if note else None,
        )
        self.switch_to(screen, self.exported)

    def exported(self, paths: list[str] | None) -> None:
        self.exports = paths or []
        self.enter(NEXT[Stage.EXPORT])

    @property
    def env_path(self) -> str:
        return self.selection.env.path if self.selection else DEFAULT_ENV

    def show_done(self) -> None:
        summary = list(self.plan.summary[:3]) if self.plan else []
        bench = None
        if self.bench is not None and self.bench.summary is not None:
            bench = f"{self.bench.summary.verdict.headline}\n  {self.bench.summary.results_md}"
        done = DoneScreen(summary, self.env_path, self.handle.logs_hint, bench, self.exports)
        self.switch_to(done, None)


def bench_about(gpus: int) -> str:
    """What the benchmark will do, for the screen before it starts."""
    if not gpus:
        return "ResNet-50 training on the CPU (small images): it checks the benchmark itself."
    ddp = f", then AMP on all {gpus} GPUs with DDP and an NCCL all-reduce test" if gpus > 1 else ""
    minutes = 4 + (2 if gpus > 1 else 0)
    return (
        "ResNet-50 training on synthetic data the way the fastest public runs do it "
        "(channels_last, cuDNN autotuning, the largest batch that fits): strict FP32, TF32, "
        f"AMP float16 and bfloat16 on one GPU{ddp}, and a data-loading check. "
        f"About {minutes} minutes; the results are compared with published numbers."
    )
