"""``gpuwizard apply``: the same plan, runner, journal and events as the TUI, without a screen.

Detect, recommend, plan; show the plan and ask (or ``--yes``); start the detached runner and
print one line per event until it stops. Attaches instead when a runner is already at work, and
resumes an unfinished run (after its reboot) with the same command. Exit codes: 0 everything
done and verified, 10 stopped for a reboot (run the same command after it), 1 a step failed or
the host changed, 2 bad input. Never imports Textual.
"""

from __future__ import annotations

import getpass
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from gpuwizard.detect import detect_host
from gpuwizard.export.answers import Answers, misfits
from gpuwizard.facts import HostFacts
from gpuwizard.hints import match as known_error
from gpuwizard.plan import Plan, Run
from gpuwizard.planner import Options, OptionsError, plan_for
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.result import Choices, Refusal
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import BadInput, target_from_facts
from gpuwizard.runner import events as ev
from gpuwizard.runner.control import (
    Backend,
    current,
    last_outcome,
    launch,
    prepare_run,
    starting,
    wait_until_started,
)
from gpuwizard.runner.follow import BadLine, EventFollower, Restarted
from gpuwizard.runner.layout import EVENTS
from gpuwizard.runner.layout import EXIT_BUSY as EXIT_RUNNER_BUSY
from gpuwizard.runner.lock import read_run_record, runner_status
from gpuwizard.runner.secrets import send_secret
from gpuwizard.selection import Selection
from gpuwizard.steps.base import PlanError

EXIT_DONE, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_REBOOT = 0, 1, 2, 10


class ApplyError(Exception):
    """Refused before anything changed; printed as one line (exit 2, or 3 when unsupported)."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT, *, no_gpu: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.no_gpu = no_gpu
        """Refused because the host has no NVIDIA GPU at all (a front end may offer the simulation)."""


@dataclass(frozen=True)
class ApplyRequest:
    choices: Choices = field(default_factory=Choices)
    options: Options = field(default_factory=Options)
    yes: bool = False
    dry_run: bool = False
    verbose: bool = False
    answers: Answers | None = None
    """Replaying an answers file: the choices and options above come from it."""
    accept_changes: bool = False
    """Plan even where the answers were made for another kind of server or resolve differently."""


def make_plan(facts: HostFacts, request: ApplyRequest) -> tuple[Plan, Selection]:
    table = load_table()
    try:
        result = recommend(table, target_from_facts(facts, table), request.choices)
    except BadInput as error:  # the pins were checked on the way in; this is the last guard
        raise ApplyError(str(error)) from None
    if isinstance(result, Refusal):
        misfit = misfits(request.answers, facts) if request.answers else []
        why = f"the answers do not fit this server: {'; '.join(misfit)}; " if misfit else ""
        raise ApplyError(f"{why}nothing to install: {result.reason}", 3, no_gpu=not result.gpus)
    try:
        selection, plan = plan_for(facts, result, request.options, table)
    except (OptionsError, PlanError) as error:
        raise ApplyError(str(error)) from None
    if request.answers is not None and not request.accept_changes:
        check_replay(request.answers, facts, plan)
    return plan, selection


def check_replay(answers: Answers, facts: HostFacts, plan: Plan) -> None:
    """Refuse to replay answers on a server they were not made for, or that plans differently."""
    problems = misfits(answers, facts)
    changed = [f"{a} -> {b}" for a, b in zip(answers.plan, plan.summary, strict=False) if a != b]
    if len(answers.plan) != len(plan.summary) or changed:
        problems.append(
            "here they resolve to a different plan: " + ("; ".join(changed) or "other steps")
        )
    if problems:
        raise ApplyError(
            "the answers do not fit this server: "
            + "; ".join(problems)
            + " (nothing was changed; pass --accept-changes to plan it anyway)",
            3,
        )


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
            f"       $ {a.display()}" if isinstance(a, Run) else f"       {a.display()}"
            for a in step.actions
        ]
    return lines


class Printer:
    """One line per event; the live log only with --verbose, and its tail when a step fails."""

    def __init__(self, out: TextIO, verbose: bool) -> None:
        self.out = out
        self.verbose = verbose
        self.tail: list[str] = []
        self.outcome: str | None = None

    def show(self, event: ev.RunEvent) -> None:  # noqa: C901 - one branch per event kind
        write = self.out.write
        match event:
            case ev.StepStarted():
                self.tail = []
                write(f"==> {event.title}\n")
            case ev.StepSkipped():
                write(f"    skip {event.step}: {event.reason}\n")
            case ev.ActionStarted():
                write(f"    $ {event.command[:200]}\n")
            case ev.LogLines():
                self.tail = (self.tail + list(event.lines))[-15:]
                if self.verbose and event.dropped:  # a flood: the step's log file has them
                    write(f"      [… {event.dropped:,} lines not shown …]\n")
                if self.verbose:
                    write("".join(f"      {line}\n" for line in event.lines))
            case ev.StepFinished():
                write(f"    {'done' if event.ok else 'FAILED'}: {event.step}: {event.reason}\n")
                if not event.ok:
                    self.explain_failure(event)
            case ev.StepAwaitingReboot():
                write(f"    {event.step}: {event.reason}\n")
            case ev.RebootRequested():
                self.outcome = "reboot"  # stays so if the reboot itself ends the runner
                write(f"==> reboot needed: {event.reason}\n")
            case ev.RebootDetected():
                write("==> the machine rebooted; checking again\n")
            case ev.RunStopped():
                self.outcome = "reboot" if event.reason == "reboot" else "failed"
                write(f"==> stopped: {event.why}\n")
            case ev.RunFinished():
                self.outcome = "done"
                write(f"==> {event.summary}\n")
            case _:
                pass
        self.out.flush()

    def explain_failure(self, event: ev.StepFinished) -> None:
        """The output's last lines, what they mean when the error is a known one, the full log."""
        write = self.out.write
        if not self.verbose:
            write("".join(f"      | {line}\n" for line in self.tail))
        if (hint := known_error(self.tail)) is not None:
            write(f"    why: {hint.explanation}\n    what to do: {hint.fix}\n")
        if event.log:
            write(f"    full log: {event.log}\n")


def answer_secret(backend: Backend, event: ev.PromptShown, ask: Callable[[str], str]) -> None:
    try:
        value = ask(f"{event.text}: ")
    except (EOFError, OSError):
        return
    send_secret(backend.state_dir, value)


def follow_run(
    backend: Backend,
    printer: Printer,
    boot_id: str | None,
    ask: Callable[[str], str] = getpass.getpass,
    offset: int = 0,
) -> str | None:
    follower = EventFollower(backend.state_dir / EVENTS, offset)

    def runner_gone() -> bool:
        return runner_status(backend.state_dir, boot_id) != "running"

    for item in follower.follow(runner_gone):
        if isinstance(item, Restarted | BadLine):
            continue
        event = item.event
        if isinstance(event, ev.PromptShown) and event.secret:
            answer_secret(backend, event, ask)
        printer.show(event)
    return printer.outcome


def runner_log_tail(backend: Backend, lines: int = 10) -> list[str]:
    try:
        return (backend.state_dir / "runner.log").read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def exit_code(outcome: str | None) -> int:
    if outcome == "done":
        return EXIT_DONE
    if outcome == "reboot":
        return EXIT_REBOOT
    return EXIT_FAILED


def confirm(out: TextIO, prompt: str) -> bool:
    if not sys.stdin.isatty():
        return False
    out.write(prompt)
    out.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def apply(backend: Backend, request: ApplyRequest, out: TextIO = sys.stdout) -> int:
    facts = detect_host(backend.host())
    state = current(backend.state_dir, facts.boot.boot_id)
    printer = Printer(out, request.verbose)
    if state.problem:
        raise ApplyError(state.problem)
    if state.status == "running":
        out.write(f"A runner is already at work on {backend.name}; following it.\n")
        return exit_code(follow_run(backend, printer, facts.boot.boot_id))
    # A run stopped because the host changed under it is planned afresh (and reviewed again).
    replan = last_outcome(backend.state_dir) == "changed"
    seen = state.journal.data.run_id if state.journal else None
    unfinished = state.journal is not None and not state.journal.data.finished and not replan
    if unfinished and not request.dry_run:
        run_id = state.journal.data.run_id if state.journal else ""
        out.write(f"Continuing the unfinished setup ({run_id}) on {backend.name}.\n")
    else:
        plan, selection = make_plan(facts, request)
        out.write(f"Plan for {backend.name}:\n" + "\n".join(plan_lines(plan)) + "\n")
        if request.dry_run:
            out.write("\n(dry run: nothing was changed)\n")
            return EXIT_DONE
        if not any(not s.satisfied for s in plan.steps):
            out.write("\nNothing to do: every step is already done.\n")
            return EXIT_DONE
        if not request.yes and not confirm(out, "\nApply this plan? [y/N] "):
            raise ApplyError(
                "not confirmed: nothing was changed (pass --yes to apply without asking)",
                EXIT_FAILED,
            )
        return start_and_follow(backend, request, facts, printer, seen, (plan, selection))
    return start_and_follow(backend, request, facts, printer, seen, None)


def start_and_follow(
    backend: Backend,
    request: ApplyRequest,
    facts: HostFacts,
    printer: Printer,
    seen: str | None,
    reviewed: tuple[Plan, Selection] | None,
) -> int:
    """Prepare (a reviewed plan) and launch the runner, one front end at a time, then follow it.

    Another front end may have started a run since the state was read (run ``seen``): then its
    runner is followed, or, when it is no longer at work, nothing is replaced and the person is
    asked to look again: a plan made before that run may be stale (T11).
    """
    out = printer.out
    boot_id = facts.boot.boot_id
    with starting(backend.state_dir):
        if runner_status(backend.state_dir, boot_id) == "running":
            out.write(
                f"Another gpuwizard started a runner on {backend.name} meanwhile; following it.\n"
            )
            return exit_code(follow_run(backend, printer, boot_id))
        journal = current(backend.state_dir, boot_id).journal
        if (journal.data.run_id if journal else None) != seen:
            raise ApplyError(
                f"another gpuwizard started a run on {backend.name} meanwhile; "
                "run the same command again to see where it stands",
                EXIT_FAILED,
            )
        if reviewed is not None:
            prepare_run(backend.state_dir, *reviewed, facts)
        command = [*backend.runner, *(["--yes"] if request.yes else [])]
        previous = read_run_record(backend.state_dir)
        events = backend.state_dir / EVENTS
        history = events.stat().st_size if events.exists() else 0
        process = launch(
            command,
            backend.state_dir,
            env=backend.env,
            systemd=False if backend.simulated else None,
        )
        started = wait_until_started(backend.state_dir, process, previous)
    if not started and process.returncode == EXIT_RUNNER_BUSY:
        out.write(f"A runner is already at work on {backend.name}; following it.\n")
        return exit_code(follow_run(backend, printer, boot_id))
    outcome = follow_run(backend, printer, boot_id, offset=history) if started else None
    report_end(backend, request, out, outcome)
    return exit_code(outcome)


def report_end(backend: Backend, request: ApplyRequest, out: TextIO, outcome: str | None) -> None:
    if outcome is None:
        out.write(
            f"The runner ended without reporting; its output is in {backend.state_dir / 'runner.log'}:\n"
        )
        out.write("".join(f"  | {line}\n" for line in runner_log_tail(backend)))
    if outcome == "reboot" and not request.yes:
        out.write(
            "Reboot when ready (sudo reboot), log in again and run the same command to continue.\n"
        )
    elif outcome == "reboot":
        out.write("The machine is rebooting; log in again and run the same command to continue.\n")
