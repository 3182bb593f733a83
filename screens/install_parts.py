"""What each part of the install view shows, derived from the Installing stage. Pure rendering.

The view (screens/install.py) keys each part by what it depends on and draws it again
only when that changes; these functions say what the key is and what it shows. Titles, commands,
reasons and output are the machine's text: shown cleaned and plain (``plain``), never as markup.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.text import Text

from gpuwizard.core.facts import mount_holding
from gpuwizard.core.hints import KnownError, match
from gpuwizard.core.plan import StepPlan, WriteFile
from gpuwizard.runner.view import RebootAsked, Stopped
from gpuwizard.screens.capabilities import RunDetails
from gpuwizard.screens.plain import part, plain
from gpuwizard.setup.stages import Installing

FAILURE_LINES = 6
"""The last lines of output a failure shows (the log pane and the log file have the rest)."""
GIB = 1024**3
Key = tuple[object, ...]


def step_details(step: StepPlan) -> Group:
    parts = [plain(step.title, "bold"), plain(step.why)]
    for action in step.actions:
        shown = (
            f"  {action.display()}" if isinstance(action, WriteFile) else f"$ {action.display()}"
        )
        parts.append(plain(shown, "cyan"))
    return Group(*parts)


def elapsed(started: str | None, now: datetime) -> str:
    if started is None:
        return ""
    try:
        seconds = max(0, int((now - datetime.fromisoformat(started)).total_seconds()))
    except ValueError:
        return ""
    return f" · running {seconds // 60}:{seconds % 60:02d}"


@dataclass(frozen=True)
class Progress:
    """The install's one line: "3/8 done · now: " the step's title " · running 2:05". Drawn in
    one row, only the title gives way (cut with "…"): the counts and the clock stay in view."""

    head: str
    title: str
    tail: str = ""

    def __str__(self) -> str:
        return f"{self.head}{self.title}{self.tail}"

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        room = options.max_width - cell_len(self.head) - cell_len(self.tail)
        title = plain(self.title)
        title.truncate(max(room, 1), overflow="ellipsis")
        line = Text.assemble(plain(self.head), title, plain(self.tail), no_wrap=True)
        line.truncate(options.max_width, overflow="ellipsis")
        yield line


def progress_line(stage: Installing, now: datetime) -> Progress:
    """ "3/8 done · now: Install the NVIDIA driver · running 2:05"."""
    todo = [s for s in stage.plan.steps if not s.satisfied]
    finished = sum(1 for s in todo if stage.state_of(s) in ("done", "skipped", "awaiting_reboot"))
    left = sum(1 for s in todo if stage.state_of(s) == "left")
    current, mode = stage.current, stage.mode
    running = stage.run.steps.get(current.id) if current and mode == "running" else None
    spent = elapsed(running.started, now) if running else ""
    verb = {"waiting": "next", "running": "now", "failed": "failed"}[mode]
    skipped = f" · {left} skipped" if left else ""
    if stage.asks is not None:  # not "running": nothing moves until the person answers
        verb, spent = "waits for you", " · Enter to answer"
    title = current.title if current else ""
    return Progress(f"{finished}/{len(todo)} done{skipped} · {verb}: ", title, spent)


# ------------------------------------------------------------------------------ the details
def details_key(stage: Installing, driven_by: str | None) -> Key:
    """What the details box shows: who drives, the reboot that waits, the question the step
    waits on, nothing left, or the step."""
    if driven_by is not None:
        return ("driven", driven_by)
    if stage.reboot_pending and isinstance(stage.run.ending, RebootAsked):
        return ("reboot", stage.run.ending.reason)
    if stage.asks is not None:
        return ("person", stage.asks.text)
    current = stage.current
    if stage.mode == "waiting" and current is None:
        return ("nothing left",)
    return ("step", current)


def details_text(key: object) -> RenderableType:
    assert isinstance(key, tuple)
    match key:
        case ("driven", who):
            return Text.assemble(
                ("Watching: ", "bold yellow"),
                part(
                    f"another gpuwizard drives this setup, {who}. Nothing is decided here; once it "
                    "has gone, this one takes over."
                ),
            )
        case ("reboot", reason):
            return Text.assemble(
                ("A reboot is pending: ", "bold yellow"),
                part(f"{reason}. "),
                "Enter shows the reboot screen again; q quits, and gpuwizard continues once the "
                "machine has rebooted.",
            )
        case ("person", question):
            return Text.assemble(
                ("The step waits for you: ", "bold yellow"),
                part(f"{question}. "),
                "Enter asks it again; the step goes on once it is answered.",
            )
        case ("nothing left",):
            return Text.assemble(
                ("Nothing is left to do. ", "bold green"),
                "Enter checks every step once more and finishes the run.",
            )
        case ("step", StepPlan() as step):
            return step_details(step)
    return Text("")


# ------------------------------------------------------------------------------ the hint
def hint_key(stage: Installing) -> Key:
    """What the hint shows: the failure (each one its own: a retry that fails alike has its own
    last lines), or a known error in the running step's output while it is there."""
    ending = stage.run.ending
    if stage.mode == "failed" and isinstance(ending, Stopped):
        return ("failed", ending, stage.run.tail, stage.run.command)
    if stage.mode == "running" and (known := match(stage.run.tail)) is not None:
        return ("known", known)
    return ("none",)


def hint_text(key: object, stage: Installing, machine: RunDetails) -> RenderableType:
    assert isinstance(key, tuple)
    match key:
        case ("failed", Stopped() as ending, tuple() as tail, command):
            shown = command if isinstance(command, str) else None
            return failure_text(stage, ending, tail, shown, machine)
        case ("known", KnownError() as known):
            return Text.assemble(
                ("⚠ in the log: ", "bold"), part(f"{known.explanation} {known.fix}")
            )
    return Text("")


def failure_text(
    stage: Installing,
    ending: Stopped,
    tail: tuple[str, ...],
    command: str | None,
    machine: RunDetails,
) -> Text:
    """What failed, how, its last lines, and the doctor's hint when a known error matches."""
    step = ending.step or stage.run.current or ""
    title = next((s.title for s in stage.plan.steps if s.id == step), step)
    text = Text.assemble(("✗ ", "bold red"), part(f"{title}: {ending.why}", "bold"))
    # Its own last lines first, where the card is seen without scrolling at 80x24: the error
    # is the last of them ("E: Unable to locate package ..."), then what it means, then how.
    last = [line for line in tail if line.strip()][-FAILURE_LINES:]
    if last:
        text.append("\nlast lines:", "dim")
        for line in last:
            text.append(*part(f"\n  | {line}"))
    known = match([*tail, ending.why])
    if known:
        text.append("\ndoctor: ", "bold yellow")
        text.append(*part(f"{known.explanation} {known.fix}{full_disk(known, machine)}"))
    if command:
        text.append("\ncommand: ", "dim")
        text.append(*part(f"$ {command}", "cyan"))
    steps = stage.run.steps
    log = steps[step].log if step in steps else None
    text.append(*part(f"\nFull log: {log or machine.logs_hint}. r retry · s skip · x abort", "dim"))
    return text


def full_disk(known: KnownError, machine: RunDetails) -> str:
    """For a full disk: which file system it is and how much is free on it now."""
    if known.id != "disk-full":
        return ""
    rows = machine.free_space()
    path = re.search(r"free space in (/\S*?)\.?(?:\s|$)", known.line)
    holding = mount_holding(path.group(1), rows) if path else None
    fullest = holding or min(rows, key=lambda row: row.free_bytes, default=None)
    if fullest is None:
        return " (df did not answer: run `df -h` to see which file system is full)"
    which = "It is" if holding else "The fullest is"
    free = fullest.free_bytes
    amount = f"{free / GIB:.1f} GiB" if free >= GIB else f"{free // 1024**2} MiB"
    return f" {which} {fullest.path}, with {amount} free now."
