"""DoneView: what was installed, where logs and results are, what to run next."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuwizard.screens.plain import part
from gpuwizard.screens.shell import StageView
from gpuwizard.setup.flow import Continue


class DoneView(StageView):
    BINDINGS = [Binding("q,enter", "finish", "Quit", priority=True)]
    DEFAULT_CSS = "DoneView #done-body { padding: 1 2; }"

    def __init__(
        self,
        summary: list[str],
        env_path: str,
        logs: str,
        bench: str | None = None,
        exports: list[str] | None = None,
    ) -> None:
        """``bench``: the benchmark's headline and results file, when one ran; ``exports``: the
        files written on the Export screen."""
        super().__init__()
        self.exports = exports or []
        self.summary = summary
        self.env_path = env_path
        self.logs = logs
        self.bench = bench

    def compose(self) -> ComposeResult:
        text = Text("Done: the GPU server is set up.\n\n", style="bold green")
        for line in self.summary:
            text.append(*part(f"  {line}\n"))
        if self.bench:
            text.append(*part(f"\nBenchmark: {self.bench}\n"))
        if self.exports:
            text.append("\nExported:\n")
            text.append(*part("".join(f"  {path}\n" for path in self.exports)))
        text.append("\nNext:\n", style="bold")
        text.append(*part(f"  source {self.env_path}/bin/activate\n"))
        text.append('  python -c "import torch; print(torch.cuda.device_count())"\n')
        text.append("  gpuwizard detect     # the machine as it is now\n")
        text.append("  gpuwizard bench      # the benchmark again, without the wizard\n")
        text.append(
            "  gpuwizard export     # deploy.sh, Dockerfile, answers.yaml, Ansible, cloud-init\n"
        )
        text.append(*part(f"\nLogs: {self.logs}\n", "dim"))
        with VerticalScroll(id="done-body"):
            yield Static(text)

    def action_finish(self) -> None:
        self.answer(Continue())
