"""``gpuwizard apply``: the one loop of wizard/setup/conduct.py, answered from the flags.

The TUI and this front end share the start rule, every transition, the effects and the loop;
this one only prints and answers (``Script``): it always goes on (Continue), decides what the
flags ask for, approves the plan when ``--yes`` is given or a person types y, runs every step at
once, answers the runner's secret from a flag or a terminal, and confirms a reboot only with
``--yes``. It prints one line per runner event and exits 0 (everything done and verified), 10
(stopped for a reboot: run the same command after it), 1 (a step failed, the host changed, not
confirmed), 2 (bad input) or 3 (nothing fits this server). Never imports Textual.
"""

from __future__ import annotations

import getpass
import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TextIO

from gpuwizard.core.hints import match as known_error
from gpuwizard.core.plan import Plan, SecretRef, WriteFile, secrets_in
from gpuwizard.core.request import SetupRequest
from gpuwizard.export.answers import Answers
from gpuwizard.frontends.secretinput import Secret
from gpuwizard.runner import events as ev
from gpuwizard.runner.control import Backend
from gpuwizard.runner.events import StopReason
from gpuwizard.runner.journal import PASSED_STATES
from gpuwizard.runner.view import RunView, Stopped, ahead_line, told_by
from gpuwizard.setup import flow
from gpuwizard.setup.conduct import conduct
from gpuwizard.setup.effects import Effects
from gpuwizard.setup.plan import Replay, has_work

EXIT_DONE, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_REBOOT = 0, 1, 2, 10
POLL_S = 0.1


class ApplyError(Exception):
    """Refused before anything changed; printed as one line (exit 2, or 3 when unsupported)."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT, *, no_gpu: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.no_gpu = no_gpu
        """Refused because the host has no NVIDIA GPU at all (a front end may offer the simulation)."""


@dataclass(frozen=True)
class ApplyRequest:
    setup: SetupRequest = field(default_factory=SetupRequest)
    yes: bool = False
    dry_run: bool = False
    verbose: bool = False
    rebooted: bool | None = None
    """``--rebooted yes|no``: whether the machine restarted, where no boot signal can tell."""
    answers: Answers | None = None
    """Replaying an answers file: the request above comes from it."""
    accept_changes: bool = False
    """Plan even where the answers resolve to a different plan here."""
    force: bool = False
    """Replay the answers on a host unlike the one they were made on (--force, GPUWIZARD_FORCE=1)."""
    secrets: Mapping[str, Secret] = field(default_factory=dict)
    """Secrets given up front (--mok-password-file/-stdin), by SecretRef name; asked for otherwise."""


def plan_lines(plan: Plan) -> list[str]:
    lines = [f"  {line}" for line in plan.summary]
    todo = [s for s in plan.steps if not s.satisfied]
    lines.append(f"\n{len(todo)} of {len(plan.steps)} steps to do:")
    for number, step in enumerate(todo, 1):
        mark = (
            " (reboot)"
            if step.reboot
            else " (takes effect after the reboot)"
            if step.needs_reboot
            else ""
        )
        lines.append(f"{number:>3}. {step.title}{mark}")
        lines += [
            f"       {a.display()}" if isinstance(a, WriteFile) else f"       $ {a.display()}"
            for a in step.actions
        ]
    return lines


class Printer:
    """One line per event; the live log only with --verbose, and its tail when a step fails."""

    def __init__(self, out: TextIO, verbose: bool) -> None:
        self.out = out
        self.verbose = verbose

    def show(self, event: ev.RunEvent, view: RunView | None = None) -> None:  # noqa: C901 - one branch per event kind
        write = self.out.write
        match event:
            case ev.StepStarted():
                write(f"==> {event.title}\n")
            case ev.StepSkipped():
                write(f"    skip {event.step}: {event.reason}\n")
            case ev.ActionStarted():
                write(f"    $ {event.command[:200]}\n")
            case ev.LogLines() if self.verbose:
                if event.dropped:  # a flood: the step's log file has them
                    write(f"      [… {event.dropped:,} lines not shown …]\n")
                write("".join(f"      {line}\n" for line in event.lines))
            case ev.StepFinished():
                write(f"    {'done' if event.ok else 'FAILED'}: {event.step}: {event.reason}\n")
                if not event.ok:
                    self.explain_failure(event, view)
            case ev.StepAwaitingReboot():
                write(f"    {event.step}: {event.reason}\n")
            case ev.RebootRequested():
                write(f"==> reboot needed: {event.reason}\n")
            case ev.RebootDetected():
                write(f"==> the machine rebooted ({told_by(event.signal)}); checking again\n")
            case ev.RunStopped() if event.reason is not StopReason.PAUSED:
                write(f"==> stopped: {event.why}\n")
            case ev.RunFinished():
                write(f"==> {event.summary}\n")
            case ev.FetchedAhead():
                write(f"    {ahead_line(event)}\n")
            case _:
                pass
        self.out.flush()

    def explain_failure(self, event: ev.StepFinished, view: RunView | None) -> None:
        """The output's last lines, what they mean when the error is a known one, the full log."""
        write = self.out.write
        tail = list(view.tail)[-15:] if view is not None else []
        if not self.verbose:
            write("".join(f"      | {line}\n" for line in tail))
        if (hint := known_error(tail)) is not None:
            write(f"    why: {hint.explanation}\n    what to do: {hint.fix}\n")
        if event.log:
            write(f"    full log: {event.log}\n")


HOW_TO_GIVE = (
    "give it with --mok-password-file FILE (chmod 600) or --mok-password-stdin, "
    "or run gpuwizard in a terminal"
)


def secrets_needed(plan: Plan, done: Collection[str] = ()) -> list[SecretRef]:
    """The secrets the plan's steps still to run will ask for, each once."""
    remaining = tuple(s for s in plan.steps if not s.satisfied and s.id not in done)
    return list(secrets_in(replace(plan, steps=remaining)))


def confirm(out: TextIO, prompt: str) -> bool:
    if not sys.stdin.isatty():
        return False
    out.write(prompt)
    out.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


class Script:
    """``apply``'s front end: its answer to each stage, and what it prints on the way."""

    def __init__(
        self,
        effects: Effects,
        request: ApplyRequest,
        out: TextIO,
        ask: Callable[[str], str] = getpass.getpass,
        has_tty: Callable[[], bool] = lambda: sys.stdin.isatty(),
        ask_line: Callable[[str], str] = input,
    ) -> None:
        self.effects = effects
        self.request = request
        self.out = out
        self.ask = ask
        self.has_tty = has_tty
        self.ask_line = ask_line
        self.printer = Printer(out, request.verbose)
        self.prepared = False
        self.reboot_said = False
        self.picked_up = False
        self.said: set[str] = set()
        """What was said once already (following a runner, continuing a run, ...)."""
        self.prompted: ev.PromptShown | None = None
        self.name = effects.backend.name

    # ------------------------------------------------------------------------ the front end
    def show(self, stage: flow.Stage) -> None:
        """Says once where a setup that began here before stands, and whom it follows."""
        if not self.picked_up and not isinstance(stage, flow.Looking):
            self.picked_up = True
            if self.effects.disk().journal is not None:
                self.out.write(f"==> where it stands: {flow.label(stage)}\n")
        match stage:
            case flow.Installing(attach=True) if self.once("attached"):
                self.out.write(f"A runner is already at work on {self.name}; following it.\n")
            case flow.Watching() if self.once("watching"):
                who = stage.holder.describe()
                self.out.write(
                    f"Another gpuwizard drives the setup of {self.name}: {who}; following it.\n"
                )

    def heard(self, news: Sequence[ev.RunEvent], view: RunView) -> None:
        for event in news:
            self.printer.show(event, view)
            self.reboot_said = self.reboot_said or isinstance(event, ev.RebootRequested)

    def finish(self, exit: flow.Exit) -> int:
        if exit.message:
            to = self.out if exit.code in (EXIT_DONE, EXIT_REBOOT) else sys.stderr
            print(exit.message, file=to)
        return exit.code

    def answer(self, stage: flow.Stage, wait_s: float | None) -> flow.Answer | int | None:
        answer = self.decide(stage)
        if answer is None and wait_s is not None:
            time.sleep(wait_s)  # a runner is at work: its next events come before anything else
        return answer

    def decide(self, stage: flow.Stage) -> flow.Answer | int | None:  # noqa: C901 - one case per stage
        match stage:
            case flow.ShowingMachine():
                return flow.Continue()
            case flow.Choosing():
                if stage.note:
                    self.out.write(f"{stage.note}\n")
                return flow.Decided(self.request.setup)
            case flow.Reviewing():
                return self.review(stage)
            case flow.Installing():
                return self.install(stage)
            case flow.Watching():
                return self.watched()
            case flow.AwaitingReboot():
                return self.reboot(stage)
            case flow.AskingReboot():
                return self.ask_rebooted(stage)
            case flow.Resuming():
                return self.resume(stage)
            case flow.Verifying():
                return self.verified(stage)
            case flow.Refused():
                raise ApplyError(stage.why, stage.code, no_gpu=stage.no_gpu)
            case flow.Looking() | flow.Benchmarking() | flow.Exporting() | flow.Done():
                return EXIT_DONE

    def once(self, what: str) -> bool:
        """True the first time ``what`` is asked about."""
        first = what not in self.said
        self.said.add(what)
        return first

    def review(self, stage: flow.Reviewing) -> flow.Answer | int:
        self.out.write(f"Plan for {self.name}:\n" + "\n".join(plan_lines(stage.plan)) + "\n")
        if self.request.dry_run:
            self.out.write("\n(dry run: nothing was changed)\n")
            return EXIT_DONE
        if not has_work(stage.plan):
            self.out.write("\nNothing to do: every step is already done.\n")
            return EXIT_DONE
        self.require_secrets(stage.plan)
        if not self.request.yes and not confirm(self.out, "\nApply this plan? [y/N] "):
            raise ApplyError(
                "not confirmed: nothing was changed (pass --yes to apply without asking)",
                EXIT_FAILED,
            )
        self.prepared = True
        return flow.Approved()

    # ------------------------------------------------------------------------------ the run
    def install(self, stage: flow.Installing) -> flow.Answer | int | None:
        """Every step at once; a secret from a flag or the terminal; a failure ends it."""
        if self.request.dry_run:
            return self.dry_run_of_unfinished(stage)
        if stage.mode == "running":
            return self.answer_secret(stage.asks)
        if stage.attach or stage.auto:  # its runner stopped where nothing leads on
            return self.failed(stage.run)
        if not self.prepared:
            self.require_secrets(stage.plan, self.finished_steps())
            self.out.write(
                f"Continuing the unfinished setup ({stage.run.run_id}) on {self.name}.\n"
            )
        return flow.RunAll()

    def failed(self, view: RunView) -> int:
        """The run stopped where nothing leads on: a failure the runner told already, or a
        runner that died (``apply`` starts no other: the next run of the command does)."""
        ending = view.ending
        if isinstance(ending, Stopped) and ending.reason is StopReason.NO_RUNNER:
            return self.runner_did_not_start()
        if isinstance(ending, Stopped) and ending.reason is StopReason.CRASHED:
            log = self.effects.state_dir / "runner.log"
            self.out.write(f"==> stopped: {ending.why}\n    (the runner's output is in {log})\n")
        return EXIT_FAILED

    def watched(self) -> int | None:
        """Another front end drives: follow its run, decide nothing, end as it ended."""
        if self.effects.runs.running() or self.effects.driven_elsewhere():
            return None
        journal = self.effects.disk().journal  # how it stands now, whoever made it so
        if journal is not None and journal.reboot is not None:
            return EXIT_REBOOT
        return EXIT_DONE if journal is not None and journal.finished else EXIT_FAILED

    def dry_run_of_unfinished(self, stage: flow.Installing) -> int:
        self.out.write(f"An unfinished setup waits on {self.name}; its plan:\n")
        self.out.write("\n".join(plan_lines(stage.plan)) + "\n\n(dry run: nothing was changed)\n")
        return EXIT_DONE

    def answer_secret(self, prompt: ev.PromptShown | None) -> flow.Answer | None:
        """The secret the runner waits for, once per question: given up front, else asked;
        declined where nobody can answer (no terminal, input closed), so the step fails at once."""
        if prompt is None or not prompt.secret or prompt is self.prompted:
            return None
        self.prompted = prompt
        given = self.request.secrets.get(prompt.secret)
        if given is not None:
            return flow.SecretGiven(given.value)
        if not self.has_tty():  # nobody can answer: the step stops now, not in 30 minutes
            self.out.write(f"    (no terminal to ask '{prompt.text}' on: {HOW_TO_GIVE})\n")
            return flow.CancelStep()
        try:
            return flow.SecretGiven(self.ask(f"{prompt.text}: "))
        except (EOFError, OSError):  # the input closed (Ctrl-D): no answer will come
            return flow.CancelStep()

    def finished_steps(self) -> set[str]:
        journal = self.effects.disk().journal
        steps = journal.steps if journal is not None else ()
        return {r.id for r in steps if r.state in PASSED_STATES or r.state == "awaiting_reboot"}

    def require_secrets(self, plan: Plan, done: Collection[str] = ()) -> None:
        """Refuse, before any change, a plan whose steps need a secret nobody can give: not
        given up front, and no terminal to ask on (exit 2, saying how to give it)."""
        if self.has_tty():
            return
        for ref in secrets_needed(plan, done):
            if ref.name not in self.request.secrets:
                raise ApplyError(
                    f"the plan needs the {ref.name} ({ref.prompt}) and there is no terminal to "
                    f"ask on: {HOW_TO_GIVE}. Nothing was changed"
                )

    def runner_did_not_start(self) -> int:
        log = self.effects.state_dir / "runner.log"
        self.out.write(f"The runner ended without reporting; its output is in {log}:\n")
        try:
            tail = log.read_text(errors="replace").splitlines()[-10:]
        except OSError:
            tail = []
        self.out.write("".join(f"  | {line}\n" for line in tail))
        return EXIT_FAILED

    # --------------------------------------------------------------------- reboot and after
    def reboot(self, stage: flow.AwaitingReboot) -> flow.Answer | int:
        if not self.reboot_said:  # else the runner's own event said so a moment ago
            self.out.write(f"==> reboot needed: {stage.reason}\n")
        if self.request.dry_run or not self.request.yes:
            self.out.write(self.how_to_reboot())
            return EXIT_REBOOT
        self.out.write("==> rebooting\n")
        return flow.RebootNow()

    def how_to_reboot(self) -> str:
        """In a simulation, how to reboot the simulated machine: never this one's `sudo reboot`."""
        if not self.effects.backend.simulated:
            return "Reboot when ready (sudo reboot), log in again and run the same command to continue.\n"
        without = " without --dry-run" if self.request.dry_run else ""
        return (
            f"Run the same command{without} with --yes to reboot the simulated machine and "
            "continue (this machine itself is not rebooted).\n"
        )

    def ask_rebooted(self, stage: flow.AskingReboot) -> flow.Answer | int:
        """Neither boot signal can tell: the person says, at a terminal (or with --rebooted)."""
        question = f"Did this machine restart since {stage.since}?"
        if self.request.dry_run:
            self.out.write(f"{question} gpuwizard would ask this (or take --rebooted yes|no).\n")
            return EXIT_DONE
        if not self.has_tty():
            raise ApplyError(
                f"cannot tell whether this machine restarted since {stage.since} (neither its "
                "boot_id nor /proc/stat's boot time can be read) and there is no terminal to ask "
                "on: run the same command with --rebooted yes or --rebooted no"
            )
        while True:
            try:
                said = self.ask_line(f"==> {question} [y/n] ").strip().lower()
            except (EOFError, OSError):
                raise ApplyError(
                    f"no answer to '{question}': run the same command with --rebooted yes or no"
                ) from None
            if said in ("y", "yes", "n", "no"):
                return flow.RebootAnswered(said.startswith("y"))
            self.out.write("    answer y (it restarted) or n (it did not)\n")

    def resume(self, stage: flow.Resuming) -> flow.Answer | int | None:
        if self.request.dry_run:
            self.out.write(
                f"The machine rebooted; gpuwizard would check {len(stage.plan.steps)} steps again.\n"
            )
            return EXIT_DONE
        if stage.rebooted is False and self.once("not restarted"):
            self.out.write(
                "==> you said the machine has not restarted: the reboot is asked for again\n"
            )
        if not stage.checked:
            return self.answer_secret(stage.run.prompt)
        if stage.problem is not None:
            return self.failed(stage.run)
        return flow.Continue()

    def verified(self, stage: flow.Verifying) -> int:
        report = stage.facts.installs.verification
        if report is not None and report.ok:
            self.out.write(
                f"==> verified: torch {report.torch} in {report.env} works on every GPU\n"
            )
        for title in stage.left:
            self.out.write(f"==> skipped by you, so the setup is not complete: {title}\n")
        return EXIT_DONE


def apply(backend: Backend, request: ApplyRequest, out: TextIO = sys.stdout) -> int:
    """Run the one loop to the end with scripted answers; the exit code."""
    replay = (
        Replay(request.answers, request.accept_changes, request.force) if request.answers else None
    )
    effects = Effects(
        backend, replay, command="gpuwizard apply", drive=not request.dry_run, front_end="apply",
        back_after_reboot=False,
    )  # fmt: skip
    # Wishes given on the command line insist: a run in progress made from others is refused.
    first = flow.Looking(request.setup, insists=True, rebooted=request.rebooted)
    try:
        return conduct(effects, Script(effects, request, out), first, (flow.Detect(),))
    finally:
        effects.close()
