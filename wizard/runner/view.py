"""What a run looks like now: one pure fold of its events, for every front end.

The TUI's install and resume screens and ``apply``'s printer render a ``RunView``; none keeps a
fold of its own. State is level-triggered: replaying events.jsonl from offset 0 gives the same
view as having watched it live, so attaching, reattaching and relaunching are the same code.
A ``RunStarted`` begins a new invocation of the runner and clears the ending: an old
``RebootRequested`` in the history is never the current run's ending. The view never decides
where the wizard goes next (wizard/setup/flow.py does, from the journal on disk).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from gpuwizard.core.facts import BootSignal
from gpuwizard.core.plan import assert_never
from gpuwizard.runner import events as ev
from gpuwizard.runner.events import StopReason

StepStatus = Literal["pending", "running", "done", "failed", "skipped", "left", "awaiting_reboot"]
TAIL_LINES = 20
"""Lines of the running step's output the view keeps (for the known-error hint)."""


@dataclass(frozen=True)
class StepView:
    status: StepStatus = "pending"
    reason: str = ""
    started: str | None = None
    """When its current attempt began (the event's time stamp, ISO 8601)."""
    log: str | None = None


@dataclass(frozen=True)
class Finished:
    ok: bool
    summary: str


@dataclass(frozen=True)
class Stopped:
    reason: StopReason
    why: str
    step: str | None


@dataclass(frozen=True)
class RebootAsked:
    step: str
    boot_id: str | None
    reason: str


Ending = Finished | Stopped | RebootAsked


@dataclass(frozen=True)
class RunView:
    run_id: str | None = None
    steps: Mapping[str, StepView] = field(default_factory=dict)
    current: str | None = None
    """The step running now, or the last one that ran."""
    command: str | None = None
    """The command the current step runs now."""
    tail: tuple[str, ...] = ()
    dropped: int = 0
    """Output lines left out of the events during a flood (the log file has them)."""
    said: int = 0
    """Output lines the events carried so far (``tail`` keeps the last of them): a view that
    shows output from events, not from a log file, shows the ones it has not shown yet."""
    prompt: ev.PromptShown | None = None
    """A question the runner waits on (a secret), until the step moves on."""
    invocation: int = 0
    """How many times a runner started on this run (the TUI starts one per step)."""
    ending: Ending | None = None
    """How the newest invocation ended; None while it runs (or before any ran)."""
    rebooted: bool = False
    """The newest invocation found that the machine rebooted."""
    rebooted_by: BootSignal | None = None
    """What told it: the boot_id, else /proc/stat's btime (the boot_id could not be read)."""
    checked: tuple[ev.StepFinished, ...] = ()
    """What the newest invocation verified after finding the reboot."""
    ahead: tuple[ev.FetchedAhead, ...] = ()
    """What fetching ahead did, in order (runner/prefetch.py): rounds, waits, results."""

    @property
    def running(self) -> bool:
        return self.invocation > 0 and self.ending is None

    def status(self, step: str) -> StepStatus:
        return self.steps.get(step, StepView()).status


def _step(view: RunView, step: str, **changes: object) -> RunView:
    steps = dict(view.steps)
    steps[step] = replace(steps.get(step, StepView()), **changes)  # type: ignore[arg-type]
    return replace(view, steps=steps)


def fold(view: RunView, envelope: ev.Envelope) -> RunView:  # noqa: C901, RET503 - exhaustive: assert_never
    """The view after one more event."""
    event = envelope.event
    match event:
        case ev.RunStarted():
            return replace(
                view,
                run_id=event.run_id,
                invocation=view.invocation + 1,
                ending=None,
                rebooted=False,
                rebooted_by=None,
                checked=(),
                prompt=None,
            )
        case ev.RebootDetected():
            return replace(view, rebooted=True, rebooted_by=event.signal)
        case ev.StepStarted():
            view = _step(
                view, event.step, status="running", reason="", started=envelope.time, log=event.log
            )
            return replace(view, current=event.step, command=None, tail=(), prompt=None)
        case ev.StepSkipped():
            status = "left" if event.by_you else "skipped"
            return _step(view, event.step, status=status, reason=event.reason)
        case ev.ActionStarted():
            return replace(view, current=event.step, command=event.command)
        case ev.LogLines():
            tail = (*view.tail, *event.lines)[-TAIL_LINES:]
            said = view.said + len(event.lines)
            return replace(view, tail=tail, dropped=view.dropped + event.dropped, said=said)
        case ev.ActionFinished():
            return view
        case ev.PromptShown():
            return replace(view, prompt=event)
        case ev.StepAwaitingReboot():
            return _step(view, event.step, status="awaiting_reboot", reason=event.reason)
        case ev.StepFinished():
            view = _step(
                view,
                event.step,
                status="done" if event.ok else "failed",
                reason=event.reason,
                log=event.log or view.steps.get(event.step, StepView()).log,
            )
            checked = (*view.checked, event) if view.rebooted else view.checked
            return replace(view, checked=checked, prompt=None, current=event.step)
        case ev.RebootRequested():
            return replace(view, ending=RebootAsked(event.step, event.boot_id, event.reason))
        case ev.RunStopped() if event.reason is StopReason.REBOOT and isinstance(
            view.ending, RebootAsked
        ):
            return view  # the reboot was asked already; its reason is the better one
        case ev.RunStopped():
            return replace(view, ending=Stopped(event.reason, event.why, event.step), prompt=None)
        case ev.RunFinished():
            return replace(view, ending=Finished(event.ok, event.summary), prompt=None)
        case ev.FetchedAhead():
            return replace(view, ahead=(*view.ahead, event))
        case _:
            assert_never(event)


def told_by(signal: BootSignal | None) -> str:  # noqa: RET503 - exhaustive: assert_never
    """How a front end says which signal judged the reboot."""
    match signal:
        case "boot_id" | None:
            return "its boot_id changed"
        case "btime":
            return "judged by the boot time in /proc/stat: the boot_id cannot be read here"
        case "person":
            return "as you said: neither the boot_id nor the boot time can be read here"
        case _:
            assert_never(signal)


def ahead_line(event: ev.FetchedAhead) -> str:  # noqa: RET503 - exhaustive: assert_never
    """How a front end says what fetching ahead did, in one line."""
    match event.state:
        case "started" | "waiting":
            return f"ahead: {event.detail}"
        case "done":
            return f"ahead: {event.step}'s downloads are in the cache ({event.detail})"
        case "failed":
            return f"ahead: fetching for {event.step} failed: {event.detail}"
        case _:
            assert_never(event.state)


def view_of(envelopes: Iterable[ev.Envelope], start: RunView | None = None) -> RunView:
    view = start or RunView()
    for envelope in envelopes:
        view = fold(view, envelope)
    return view
