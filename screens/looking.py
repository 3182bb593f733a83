"""LookingView: shown while the machine is being looked at (at start-up and after a reboot).

It is the first frame's view: it imports nothing of the flow (the flow, the engine and every
other view load behind it, off the UI thread: wizard/frontends/app.py)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from gpuwizard.screens.shell import StageView


class LookingView(StageView):
    def compose(self) -> ComposeResult:
        yield Static("\n  Looking at this machine…", id="waiting")
