"""Which view shows each stage of the flow, built from the stage and the effects that carry it out (``Effects``).

The TUI's only mapping from the core (wizard/setup/) to its screens: it builds what a view
needs to show and gives it the capabilities it may use (``Effects`` as RunControl, a benchmark
session, render and write functions). It decides nothing about where the wizard goes.
"""

from __future__ import annotations

import functools
from pathlib import Path

from gpuwizard.bench.chart import ReferenceMark, reference_for
from gpuwizard.bench.launch import BenchSpec, allreduce_max_mib
from gpuwizard.bench.references import load_references
from gpuwizard.bench.results import last_interrupted
from gpuwizard.bench.session import BenchSession
from gpuwizard.core.facts import HostFacts, NvmlOk, judge_boot
from gpuwizard.core.machine_words import gpuwizard_command
from gpuwizard.core.paths import DEFAULT_ENV, MINIFORGE_DIR
from gpuwizard.core.plan import assert_never
from gpuwizard.core.request import SetupRequest
from gpuwizard.core.selection import Selection
from gpuwizard.core.version import Version
from gpuwizard.export.formats import FORMATS, render
from gpuwizard.export.source import ALREADY_SET_UP, ExportSource
from gpuwizard.recommend import host_pins
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.existing import ranked
from gpuwizard.recommend.os_support import match_os
from gpuwizard.recommend.result import Recommendation, Refusal
from gpuwizard.recommend.sizing import assess
from gpuwizard.recommend.table import CompatTable
from gpuwizard.recommend.target import Target, target_from_facts
from gpuwizard.runner.files import write_files
from gpuwizard.screens.benchmark import BenchmarkView
from gpuwizard.screens.choose import ChooseView, Offers
from gpuwizard.screens.done import DoneView, InstalledDriver
from gpuwizard.screens.export import ExportView
from gpuwizard.screens.install import InstallView
from gpuwizard.screens.looking import LookingView
from gpuwizard.screens.machine import MachineView
from gpuwizard.screens.reboot import RebootView, RestartedView
from gpuwizard.screens.refused import RefusedView
from gpuwizard.screens.resume import ResumeView
from gpuwizard.screens.review import ReviewView
from gpuwizard.screens.shell import StageView
from gpuwizard.screens.verify import VerifyView
from gpuwizard.setup import flow
from gpuwizard.setup.effects import Effects
from gpuwizard.setup.setups import SetupError, exportable_setup, left_note

DATALOAD_DIR = "/var/tmp"
"""Where the data-loading check writes its scratch files: a disk datasets usually share."""


def view_for(stage: flow.Stage, effects: Effects, ssh_hint: str) -> StageView:  # noqa: C901, RET503 - one case per stage
    match stage:
        case flow.Looking():
            return LookingView()
        case flow.ShowingMachine():
            facts = stage.context.facts
            findings = assess(facts, effects.table)
            gpus = bool(facts.hardware.gpus)
            return MachineView(facts, findings, can_continue=gpus, set_up=stage.set_up)
        case flow.Choosing():
            return recommend_view(stage, effects)
        case flow.Reviewing():
            return ReviewView(stage.plan)
        case flow.Installing():
            return InstallView(stage, effects)
        case flow.Watching():
            return InstallView(stage, effects, driven_by=stage.holder.describe())
        case flow.AwaitingReboot():
            again = gpuwizard_command(effects.backend.cli_args)
            come_back = f"{ssh_hint}   then   {again}"
            mok = any(s.id == "enroll-mok" and not s.satisfied for s in stage.plan.steps)
            return RebootView(stage.reason, come_back, effects.backend.simulated, mok)
        case flow.AskingReboot():
            return RestartedView(stage.since)
        case flow.Resuming():
            return ResumeView(stage)
        case flow.Verifying():
            report = stage.facts.installs.verification
            earlier = (
                report is not None and judge_boot(report.boot, stage.facts.boot.mark).same is False
            )
            return VerifyView(report, stage.left, earlier)
        case flow.Benchmarking():
            return benchmark_view(
                stage.facts, stage.selection, effects, again=stage.attempt > 0, left=stage.left
            )
        case flow.Exporting():
            return export_view(stage, effects)
        case flow.Done():
            summary = list(stage.plan.summary[:3]) if stage.plan else []
            return DoneView(
                summary,
                env_path(stage.selection),
                effects.logs_hint,
                stage.bench,
                list(stage.exports),
                driver=installed_driver(stage.selection, stage.facts),
                cli_args=effects.backend.cli_args,
                left=stage.left,
                enter=enter_command(stage.selection),
            )
        case flow.Refused():
            return RefusedView(stage.why, can_go_back=stage.back is not None)
        case _:
            assert_never(stage)


def installed_driver(
    selection: Selection | None, facts: HostFacts | None
) -> InstalledDriver | None:
    """The driver this setup installed, as the machine reports it at the end (NVML)."""
    if selection is None or facts is None or not selection.driver.installs:
        return None
    nvml = facts.boot.nvml
    if not isinstance(nvml, NvmlOk):
        return None
    choice = selection.driver
    return InstalledDriver(
        choice.branch, choice.flavor, choice.version, nvml.driver_version, choice.source
    )


CHECK = '-c "import torch; print(torch.cuda.device_count())"'


def enter_command(selection: Selection | None) -> tuple[str, ...]:
    """The commands that use the environment where ``source ENV/bin/activate`` and ``python``
    are not them: conda's own activation, or (one that was here already) its own interpreter.
    (): a venv gpuwizard made."""
    if selection is None:
        return ()
    env = selection.env
    if env.existing is not None:
        return (f"{env.existing} {CHECK}",)
    if env.kind == "conda":
        hook = f'eval "$({MINIFORGE_DIR}/bin/conda shell.bash hook)"'
        return (f"{hook} && conda activate {env.path}", f"python {CHECK}")
    return ()


def env_path(selection: Selection | None) -> str:
    return selection.env.path if selection else DEFAULT_ENV


def recommend_view(stage: flow.Choosing, effects: Effects) -> ChooseView:
    table = effects.table
    target = target_from_facts(stage.context.facts, table)

    @functools.lru_cache(maxsize=512)
    def recompute(request: SetupRequest) -> Recommendation | Refusal:
        """The engine on this host, once per request: the view asks again for every value of
        every tried wish each time a choice changes (it made ~170 calls to show Choose once)."""
        return recommend(table, target, request)

    request = stage.context.request
    facts = stage.context.facts
    fits = ranked(facts, table)
    usable = tuple(f.env.path for f in fits if f.usable)
    offers = offers_on(table, target, usable)
    here = {f.env.path: f"{f.env.words()}: {f.summary}" for f in fits}
    return ChooseView(recompute(request), request, recompute, offers, stage.note, here=here)


def offers_on(table: CompatTable, target: Target, usable: tuple[str, ...] = ()) -> Offers:
    """What this host offers for each wish: every known release, the chosen release's CUDA
    builds, the driver branches, kernel modules and Pythons it can have, keeping the driver
    only where one is installed (and owned here), and the PyTorch environments already here
    that fit it (``usable``)."""
    versions = tuple(sorted((r.version for r in table.torch_releases), key=Version.parse, reverse=True))  # fmt: skip
    builds = {r.version: r.variants for r in table.torch_releases}
    pins = offered_pins(table, target)
    driver = target.driver
    kept = (driver.version,) if driver and not target.driver_managed_elsewhere else ()

    def offers(
        request: SetupRequest, result: Recommendation | Refusal
    ) -> dict[str, tuple[str, ...]]:
        release = request.torch
        if release not in builds and isinstance(result, Recommendation):
            release = result.torch.version  # the builds of the release recommended
        variants = builds.get(release, ()) if release else ()
        return {
            "torch": versions, "variant": variants, **pins, "keep_driver": kept, "use_env": usable,
        }  # fmt: skip

    return offers


def offered_pins(table: CompatTable, target: Target) -> dict[str, tuple[str, ...]]:
    """The driver branches, kernel modules and Pythons this host offers, to choose from."""
    if target.driver_managed_elsewhere:
        return {"driver_branch": (), "driver_flavour": (), "python": ()}
    os_row = match_os(table, target.os_id or "", target.os_version or "")
    return {
        "driver_branch": host_pins.offered_branches(table, os_row),
        "driver_flavour": ("open", "proprietary"),
        "python": host_pins.offered_pythons(target, os_row),
    }


def benchmark_view(
    facts: HostFacts,
    selection: Selection | None,
    effects: Effects,
    again: bool = False,
    left: tuple[str, ...] = (),
) -> BenchmarkView:
    """``again``: the person asked to run it once more (r): it starts at once; ``left``: the
    steps the person skipped at install, said before it starts (the figures may show them)."""
    backend = effects.backend
    gpus = len(facts.hardware.gpus)
    memory = min((g.model.memory_gib or 0 for g in facts.hardware.gpus), default=0)
    spec = BenchSpec(
        python=backend.python_of(
            env_path(selection), selection.env.existing if selection else None
        ),
        gpus=gpus,
        dataload_dir=DATALOAD_DIR,
        allreduce_max_mib=allreduce_max_mib(memory),
    )
    host = backend.host()
    session = BenchSession(spec, backend.state_dir, facts, nvml=host.nvml, env=dict(backend.env))
    name = facts.hardware.gpus[0].model.name if gpus else None
    references = load_references()

    def reference(mode: str, world_size: int) -> ReferenceMark | None:
        return reference_for(references, name, mode, world_size) if name else None

    about = bench_about(gpus)
    if left:
        skipped = "; ".join(left)
        about = (
            f"Skipped at install: {skipped}. The setup is incomplete: the benchmark may fail or "
            f"measure less than this machine can do.\n\n{about}"
        )
    if not again and (interrupted := last_interrupted(backend.state_dir)) is not None:
        about = f"{interrupted.sentence()}\n\n{about}"
    return BenchmarkView(session, about, reference, begin_at_once=again)


def export_view(stage: flow.Exporting, effects: Effects) -> ExportView:
    source, note = ExportSource(stage.plan, stage.selection, stage.facts), left_note(stage.left)
    if source.already_set_up:  # this run only verified: export the run that set it up
        try:
            setup = exportable_setup(effects.state_dir)
        except SetupError:
            setup = None
        if setup is not None:
            source, note = setup.source, setup.note
        else:
            note = ALREADY_SET_UP
    formats = [(f.name, f.title) for f in FORMATS.values()]
    return ExportView(
        formats,
        lambda name: render(source, name),
        lambda folder, files: write_files(folder, [(f.name, f.data, f.mode) for f in files]),
        str(Path.home() / "gpuwizard-export"),
        note[0].upper() + note[1:] if note else None,
        existing=files_in,
    )


def bench_about(gpus: int) -> str:
    """What the benchmark will do and what its time depends on, for the view before it starts.

    No fixed duration: a one-GPU run took about 106 s on a real H200 (issue 29), a slower GPU
    takes longer for the same work, and DDP is one more run on every GPU."""
    if not gpus:
        return "ResNet-50 training on the CPU (small images): it checks the benchmark itself."
    ddp = f", then AMP on all {gpus} GPUs with DDP and an NCCL all-reduce test" if gpus > 1 else ""
    also = f"; the run on all {gpus} GPUs comes on top" if gpus > 1 else ""
    return (
        "ResNet-50 training on synthetic data the way the fastest public runs do it "
        "(channels_last, cuDNN autotuning, a batch sized to the GPU's memory): strict FP32, TF32, "
        f"AMP float16 and bfloat16 on one GPU{ddp}, and a data-loading check. "
        "How long depends on the GPU: about 2 minutes on one H200, several on a slower GPU"
        f"{also}. The results are compared with published numbers."
    )


def files_in(folder: Path, names: list[str]) -> list[str]:
    """Which of these names are in the folder already (an export would replace them)."""
    return [name for name in names if (folder / name).is_symlink() or (folder / name).exists()]
