"""Shown while the machine is being looked at (at start-up and after a reboot)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, Header, Static


class Waiting(Screen[None]):
    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("\n  Looking at this machine…", id="waiting")
        yield Footer()
