"""The runner's contract with its front ends: the files in its state directory and its exit codes.

Kept apart from wizard/runner/session.py so a front end (the TUI above all) can find, read and
start a run without importing the executor, the steps and pexpect.
"""

from __future__ import annotations

from pathlib import Path

from gpuwizard.core.facts import HostFacts
from gpuwizard.runner.files import write_atomic

JOURNAL = "journal.json"
EVENTS = "events.jsonl"
PLANNED_FACTS = "planned-facts.json"

EXIT_DONE = 0
EXIT_FAILED = 1
EXIT_STOPPED = 2
EXIT_BUSY = 3
EXIT_CHANGED = 4
EXIT_PAUSED = 5
EXIT_REBOOT = 10
EXITS = {
    "done": EXIT_DONE,
    "failed": EXIT_FAILED,
    "reboot": EXIT_REBOOT,
    "changed": EXIT_CHANGED,
    "stopped": EXIT_STOPPED,
    "paused": EXIT_PAUSED,
}


def save_planned_facts(state_dir: Path, facts: HostFacts) -> None:
    """The facts the plan was made from; the runner builds its steps from these, not a new look."""
    write_atomic(state_dir / PLANNED_FACTS, facts.to_json().encode("utf-8"), 0o600)


def load_planned_facts(state_dir: Path) -> HostFacts:
    return HostFacts.from_json((state_dir / PLANNED_FACTS).read_text(encoding="utf-8"))
