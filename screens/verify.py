"""VerifyView: what the new environment's PyTorch saw on every GPU."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuwizard.core.facts import VerifyReport
from gpuwizard.screens.plain import part
from gpuwizard.screens.shell import StageView
from gpuwizard.setup.flow import Continue


class VerifyView(StageView):
    BINDINGS = [
        Binding("enter", "proceed", "Continue", priority=True),
    ]
    DEFAULT_CSS = "VerifyView #verify-body { padding: 1 2; }"

    def __init__(
        self, report: VerifyReport | None, left: tuple[str, ...] = (), earlier: bool = False
    ) -> None:
        """``left``: the titles of the steps the person skipped (named: the setup is not
        complete); ``earlier``: the report was made in an earlier boot (said, with how to
        verify again)."""
        super().__init__()
        self.report = report
        self.left = left
        self.earlier = earlier

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="verify-body"):
            yield Static(self.summary())

    def summary(self) -> Text:
        report = self.report
        if report is None:
            return Text("No verification report: run the verify step.", style="yellow")
        head = (
            ("✓ PyTorch works on every GPU", "bold green")
            if report.ok
            else ("✗ Verification found problems", "bold red")
        )
        text = Text.assemble(head, part(f"\n\ntorch {report.torch} in {report.env}\n\n"))
        for device in report.devices:
            text.append(*part(f"  {device}\n"))
        for problem in report.problems:
            text.append(*part(f"  ✗ {problem}\n", "red"))
        if self.earlier:
            text.append(
                *part(
                    "  This was checked in an earlier boot: to check it now, plan again "
                    "(q, then gpuwizard, Enter, c): the verification runs once more.\n",
                    "yellow",
                )
            )
        for title in self.left:
            text.append(
                *part(f"  ⊘ skipped by you: {title} (the setup is not complete)\n", "yellow")
            )
        return text

    def action_proceed(self) -> None:
        self.answer(Continue())
