"""Messages screens receive from their workers. Not bubbling: a progress message is for the screen
that follows the run, not for every ancestor (ARCHITECTURE U3)."""

from __future__ import annotations

from textual.message import Message

from gpuwizard.runner.events import RunEvent


class RunProgress(Message, bubble=False):
    """One event from the runner's events.jsonl."""

    def __init__(self, event: RunEvent) -> None:
        super().__init__()
        self.event = event


class RunnerGone(Message, bubble=False):
    """The runner process ended (after its last event was delivered)."""
