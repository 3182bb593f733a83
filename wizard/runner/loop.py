"""Apply a reviewed plan: re-check each step on fresh facts, run it, verify it, record it.

The loop, step by step (ARCHITECTURE X2, X3, X7, B1-B3):
- before a step, facts are detected again: a satisfied step is skipped; a step whose fresh plan
  differs from the reviewed one stops the run ("the host changed since you reviewed the plan");
- each action is announced in the journal before it runs (write-ahead) and marked after, so a
  crash resumes at the action that may have been half done, and never re-runs a finished one;
- a step is done only when ``verify`` passes on fresh facts; one that takes effect at boot waits
  in ``awaiting_reboot`` and is verified after the reboot;
- a reboot step records the boot_id, stops and asks; only a changed, well-formed boot_id proves
  the reboot happened (where it cannot be read, a later /proc/stat btime; with neither, the
  person's answer to "did this machine restart?", which the front end passes on and the journal
  keeps; without one the run stops and says how to give it). Reboot cycles per step are capped.
Everything it touches is injected, so every path is tested without a system.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from gpuwizard.core.facts import BootJudgement, BootSignal, HostFacts, judge_boot
from gpuwizard.core.plan import StepPlan
from gpuwizard.runner.events import (
    ActionFinished,
    ActionStarted,
    RebootDetected,
    RebootRequested,
    RunEvent,
    RunFinished,
    RunStopped,
    StepAwaitingReboot,
    StepFinished,
    StepSkipped,
    StepStarted,
    StopReason,
)
from gpuwizard.runner.executor import Outcome
from gpuwizard.runner.failpoints import failpoint
from gpuwizard.runner.journal import (
    MAX_REBOOTS_PER_STEP,
    PASSED_STATES,
    SKIPPED_BY_YOU,
    BootAnswer,
    Journal,
    RebootRecord,
    StepRecord,
    now,
)
from gpuwizard.runner.prefetch import Ahead
from gpuwizard.steps.base import PlanError, Step

REBOOT_MISSED = "the reboot did not happen (the boot_id is unchanged)"
REBOOT_DENIED = "the reboot did not happen (you said the machine has not restarted)"
CANNOT_JUDGE = "cannot judge the reboot"
HOW_TO_ANSWER = (
    "answer whether it restarted: run gpuwizard in a terminal, or apply with --rebooted yes or no"
)


@dataclass(frozen=True)
class PersonAnswer:
    """What a person answered to "did this machine restart since the reboot was asked for?"."""

    rebooted: bool
    front_end: str
    """Which front end asked: "tui" or "apply"."""


def reboot_missed(signal: BootSignal | None) -> str:
    """Why the reboot step runs again, in the words of what told it."""
    return REBOOT_DENIED if signal == "person" else REBOOT_MISSED


def cannot_judge(pending: RebootRecord, facts: HostFacts) -> str:
    """Why a reboot cannot be judged, and what the person is asked to do."""
    boot_id_read = pending.boot_id_before is not None and facts.boot.boot_id is not None
    btime_read = pending.btime_before is not None and facts.boot.btime is not None
    if not boot_id_read and not btime_read:
        detail = "neither the boot_id nor the boot time (/proc/stat btime) can be read"
    else:  # the boot_id cannot be read and btime moved back: the clock was set back
        detail = "the boot_id cannot be read and the boot time moved back (the clock was set)"
    return (
        f"{CANNOT_JUDGE}: {detail}, so it is unknown whether the reboot happened; "
        f"check (uptime, who -b), then {HOW_TO_ANSWER}"
    )


ExitKind = Literal["done", "failed", "reboot", "changed", "stopped", "paused"]
StepOutcome = Literal["continue", "failed", "reboot", "changed", "stopped"]
StepRun = Generator[RunEvent, None, StepOutcome]


@dataclass
class Applier:
    journal: Journal
    steps: Mapping[str, Step]
    probe: Callable[[], HostFacts]
    execute: Callable[..., Outcome]
    reboot_confirmed: bool = False
    """--yes: run the reboot action instead of stopping to ask."""
    restore: Callable[[str], list[str]] = lambda _step: []
    log_path: Callable[[str], str | None] = lambda _step: None
    one_step: bool = False
    """Stop after one step that did work (the TUI confirms each step)."""
    check_only: bool = False
    """Only judge a reboot and verify the steps that waited for it, then stop."""
    reboot_now: bool = False
    """Carry out the reboot the journal waits for (the person confirmed it), then stop."""
    exit: ExitKind = "stopped"
    answer: PersonAnswer | None = None
    """The person's answer, used only where neither the boot_id nor btime can judge the reboot."""
    reboot_missed: BootSignal | None = None
    """What said the reboot asked for last time did not happen: it is offered again."""
    ahead: Ahead | None = None
    """Fetching later steps' downloads beside the steps (runner/prefetch.py); None: not done."""

    # ------------------------------------------------------------------------------ start-up
    def resume_after_reboot(self, facts: HostFacts) -> Generator[RunEvent, None, ExitKind | None]:
        """Judge a requested reboot by the boot_id: happened, not happened, or unknown.

        Returns how the run ends when it must not continue, else None.
        """
        pending = self.journal.data.reboot
        if self.journal.data.machine_id and facts.machine_id != self.journal.data.machine_id:
            why = "the machine-id changed since this run began: this state belongs to another machine (a cloned disk?)"
            yield RunStopped(StopReason.OTHER_MACHINE, why)
            return "stopped"
        if pending is None:
            return None
        judged = self.judge(pending, facts)
        if judged.same is None and self.reboot_now:  # the person confirmed the reboot: carry it out
            return (yield from self.carry_out_reboot(pending))
        if judged.same is None:
            yield RunStopped(StopReason.BOOT_UNKNOWN, cannot_judge(pending, facts), pending.step)
            return "stopped"
        if judged.same:
            if self.reboot_now:
                return (yield from self.carry_out_reboot(pending))
            self.offer_reboot_again(pending, judged.signal)
            return None
        yield RebootDetected(
            pending.boot_id_before,
            facts.boot.boot_id,
            judged.signal or "boot_id",
            pending.btime_before,
            facts.boot.btime,
        )
        failures = yield from self.verify_waiting(facts)
        self.journal.set(reboot=None)  # last: a crash before this verifies the same boot again
        if failures:
            yield RunStopped(
                StopReason.FAILED,
                f"{failures[0][1]}; stopping rather than reboot again",
                failures[0][0],
            )
            return "failed"
        return None

    def judge(self, pending: RebootRecord, facts: HostFacts) -> BootJudgement:
        """The boot_id, else btime; only where neither can tell, the person's answer, kept in
        the journal with when and which front end gave it."""
        judged = judge_boot(pending.mark, facts.boot.mark)
        if judged.same is not None or self.answer is None:
            return judged
        answer = BootAnswer(
            pending.step,
            self.answer.rebooted,
            pending.requested_at,
            now(),
            self.answer.front_end,
        )
        self.journal.set(boot_answers=(*self.journal.data.boot_answers, answer))
        return BootJudgement(not self.answer.rebooted, "person")

    def carry_out_reboot(self, pending: RebootRecord) -> Generator[RunEvent, None, ExitKind]:
        """Run the reboot step's command: the machine goes down with this process, or says why
        it did not."""
        planned = next(s for s in self.journal.data.plan.steps if s.id == pending.step)
        if self.ahead is not None:
            yield from self.ahead.before_reboot(self.journal.data)
        if pending.commanded_at is not None:  # the last reboot command changed nothing (T02)
            still = self.steps[planned.id].check(self.probe()).reason
            why = f"{reboot_missed(pending.signal)}; still: {still}"
            yield RebootRequested(planned.id, pending.boot_id_before, pending.attempt, why)
        self.journal.set(reboot=dataclasses.replace(pending, commanded_at=now()))
        failpoint("reboot.before_cmd")
        yield ActionStarted(planned.id, 0, planned.actions[0].display())
        outcome = self.execute(planned.id, planned.actions[0])
        yield ActionFinished(planned.id, 0, outcome.ok, outcome.result)
        if not outcome.ok:
            why = f"the reboot command failed: {outcome.result}; reboot by hand, then run gpuwizard"
            yield RunStopped(StopReason.FAILED, why, planned.id)
            return "failed"
        yield RunStopped(StopReason.REBOOT, "rebooting", planned.id)
        return "reboot"

    def offer_reboot_again(self, pending: RebootRecord, signal: BootSignal | None) -> None:
        """Same boot: the reboot did not happen; its step waits again and runs again (T02)."""
        record = self.journal.data.record(pending.step)
        self.journal.record_reboot(
            pending.step,
            None,
            state="pending",
            reboots=max(0, record.reboots - 1),  # a reboot that never happened is no cycle
            reason=reboot_missed(signal),
        )
        self.reboot_missed = signal or "boot_id"

    def verify_waiting(self, facts: HostFacts) -> Generator[RunEvent, None, list[tuple[str, str]]]:
        """Verify the steps that waited for a boot; returns (step, why) of those out of retries."""
        failures: list[tuple[str, str]] = []
        for record in self.journal.data.steps:
            if record.state != "awaiting_reboot":
                continue
            check = self.steps[record.id].verify(facts)
            if check.satisfied:
                self.journal.update(record.id, state="done", reason=check.reason)
                yield StepFinished(record.id, True, check.reason, self.log_path(record.id))
            elif record.reboots < MAX_REBOOTS_PER_STEP:
                self.journal.update(record.id, state="pending", next_action=0, reason=check.reason)
                yield StepFinished(
                    record.id, False, f"{check.reason}; trying once more", self.log_path(record.id)
                )
            else:
                why = f"{check.reason} (after {record.reboots} reboots)"
                self.journal.update(record.id, state="failed", reason=why)
                yield StepFinished(record.id, False, why, self.log_path(record.id))
                failures.append((record.id, why))
        return failures

    def verify_leftovers(self) -> Generator[RunEvent, None, bool]:
        """At the end, a step still waiting for a boot that no reboot step followed is verified now.

        Returns True when one of them does not hold: the run is then not done.
        """
        if not any(r.state == "awaiting_reboot" for r in self.journal.data.steps):
            return False
        failures = yield from self.verify_waiting(self.probe())
        unfinished = [r for r in self.journal.data.steps if r.state not in PASSED_STATES]
        if not unfinished:
            return False
        why = failures[0][1] if failures else f"{unfinished[0].id}: {unfinished[0].reason}"
        yield RunStopped(
            StopReason.FAILED,
            f"{why}; it waits for a reboot that no step asked for",
            unfinished[0].id,
        )
        return True

    # ---------------------------------------------------------------------------------- loop
    def run(self) -> Iterator[RunEvent]:
        facts = self.probe()
        stop = yield from self.resume_after_reboot(facts)
        if stop is not None:
            self.exit = stop
            return
        if self.check_only or self.reboot_now:
            self.exit = "paused"
            yield RunStopped(
                StopReason.PAUSED, "checked after the reboot; waiting for your go-ahead"
            )
            return
        for planned in self.journal.data.plan.steps:
            record = self.journal.data.record(planned.id)
            if record.state in PASSED_STATES or record.state == "awaiting_reboot":
                continue
            if record.id in self.journal.data.skip_requested:
                self.journal.update(record.id, state="left", reason=SKIPPED_BY_YOU)
                yield StepSkipped(record.id, SKIPPED_BY_YOU, by_you=True)
                continue
            outcome = yield from self.run_step_after_its_downloads(planned, record)
            if outcome != "continue":
                self.exit = outcome
                return
            if (
                self.one_step
                and self.journal.data.record(planned.id).state not in ("skipped",)
                and self.remaining()
            ):
                self.exit = "paused"
                yield RunStopped(
                    StopReason.PAUSED, "waiting for your go-ahead for the next step", planned.id
                )
                return
        if (yield from self.verify_leftovers()):
            self.exit = "failed"
            return
        if self.ahead is not None:  # every step is done: nothing left to fetch for
            self.ahead.stop()
        self.journal.set(finished=True)
        self.exit = "done"
        yield RunFinished(True, "every step is done")

    def run_step_after_its_downloads(self, planned: StepPlan, record: StepRecord) -> StepRun:
        """The step, once what is being fetched ahead for it has landed (runner/prefetch.py)."""
        if self.ahead is not None:
            yield from self.ahead.before_step(self.journal.data, planned.id)
        return (yield from self.run_step(planned, record))

    def remaining(self) -> bool:
        return any(
            r.state not in PASSED_STATES and r.state != "awaiting_reboot"
            for r in self.journal.data.steps
        )

    def run_step(self, planned: StepPlan, record: StepRecord) -> StepRun:
        step = self.steps[planned.id]
        facts = self.probe()
        if record.state == "pending" and record.next_action == 0:
            if step.check(facts).satisfied:
                reason = step.check(facts).reason
                self.journal.update(
                    planned.id, state="skipped" if record.attempts == 0 else "done", reason=reason
                )
                yield StepSkipped(planned.id, reason)
                return "continue"
            try:
                fresh = step.plan(facts)
            except PlanError as error:
                self.journal.update(planned.id, state="failed", reason=str(error))
                yield StepFinished(planned.id, False, str(error))
                yield RunStopped(StopReason.FAILED, str(error), planned.id)
                return "failed"
            if fresh != planned.actions and record.attempts == 0:
                why = f"the host changed since you reviewed the plan: {step.check(facts).reason}; review the plan again"
                yield RunStopped(StopReason.CHANGED, why, planned.id)
                return "changed"
        if planned.reboot:
            return (yield from self.request_reboot(planned, record, facts))
        record = self.journal.update(planned.id, state="running", attempts=record.attempts + 1)
        yield StepStarted(planned.id, planned.title, record.attempts, self.log_path(planned.id))
        for index in range(record.next_action, len(planned.actions)):
            action = planned.actions[index]
            self.journal.update(planned.id, next_action=index)
            yield ActionStarted(planned.id, index, action.display())
            outcome = self.execute(planned.id, action)
            yield ActionFinished(planned.id, index, outcome.ok, outcome.result)
            if not outcome.ok:
                restored = self.restore(planned.id)
                why = outcome.result + (f"; restored {', '.join(restored)}" if restored else "")
                self.journal.update(planned.id, state="failed", reason=why, next_action=0)
                yield StepFinished(planned.id, False, why, self.log_path(planned.id))
                yield RunStopped(StopReason.FAILED, why, planned.id)
                return "failed"
            self.journal.update(planned.id, next_action=index + 1)
        return (yield from self.finish_step(step, planned))

    def finish_step(self, step: Step, planned: StepPlan) -> StepRun:
        facts = self.probe()
        if planned.needs_reboot:
            reason = "takes effect at the next boot"
            record = self.journal.data.record(planned.id)
            self.journal.update(
                planned.id,
                state="awaiting_reboot",
                next_action=0,
                reboots=record.reboots + 1,
                reason=reason,
            )
            yield StepAwaitingReboot(planned.id, reason)
            return "continue"
        check = step.verify(facts)
        if not check.satisfied:
            self.journal.update(planned.id, state="failed", reason=check.reason, next_action=0)
            yield StepFinished(planned.id, False, check.reason, self.log_path(planned.id))
            yield RunStopped(StopReason.FAILED, check.reason, planned.id)
            return "failed"
        self.journal.update(planned.id, state="done", reason=check.reason, next_action=0)
        yield StepFinished(planned.id, True, check.reason, self.log_path(planned.id))
        return "continue"

    def request_reboot(self, planned: StepPlan, record: StepRecord, facts: HostFacts) -> StepRun:
        if record.reboots >= MAX_REBOOTS_PER_STEP:
            still = self.steps[planned.id].check(facts).reason
            why = f"rebooted {record.reboots} times and still: {still}; stopping here rather than loop"
            self.journal.update(planned.id, state="failed", reason=why)
            yield StepFinished(planned.id, False, why)
            yield RunStopped(StopReason.FAILED, why, planned.id)
            return "failed"
        if self.ahead is not None:
            yield from self.ahead.before_reboot(self.journal.data)
        # Neither boot_id nor btime: the person will be asked whether the machine restarted.
        signal = facts.boot.mark.signal or "person"
        reason = self.steps[planned.id].check(facts).reason
        if self.reboot_missed:
            reason = f"{reboot_missed(self.reboot_missed)}; still: {reason}"
        attempt = record.reboots + 1
        pending = RebootRecord(
            planned.id, facts.boot.boot_id, now(), attempt, None, facts.boot.btime, signal
        )
        self.journal.record_reboot(
            planned.id, pending, state="awaiting_reboot", reboots=attempt, reason=reason
        )
        failpoint("reboot.after_state_write")
        yield RebootRequested(planned.id, facts.boot.boot_id, attempt, reason, signal)
        if self.reboot_confirmed:
            failpoint("reboot.before_cmd")
            yield ActionStarted(planned.id, 0, planned.actions[0].display())
            outcome = self.execute(planned.id, planned.actions[0])
            yield ActionFinished(planned.id, 0, outcome.ok, outcome.result)
        yield RunStopped(StopReason.REBOOT, f"reboot needed: {reason}", planned.id)
        return "reboot"
