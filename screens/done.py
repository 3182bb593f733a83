"""DoneView: what was installed, where logs and results are, what to run next.

The driver line says which release is on the machine now, and why it is not the one Choose
named when they differ. The commands under "Next" choose the same machine as this run: on a
simulated run they carry ``--simulate PROFILE`` (without it they would act on this machine)."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuwizard.core.machine_words import gpuwizard_command
from gpuwizard.screens.breaking import BreakingText
from gpuwizard.screens.plain import part, plain
from gpuwizard.screens.shell import StageView
from gpuwizard.setup.flow import Continue

ARCHIVES = {
    "ubuntu-archive": "Ubuntu's archive",
    "debian-archive": "Debian's archive",
    "cuda-repo-apt": "NVIDIA's CUDA repository",
    "cuda-repo-dnf": "NVIDIA's CUDA repository",
}


@dataclass(frozen=True)
class InstalledDriver:
    """The driver the setup installed, beside the release Choose named for its branch."""

    branch: str
    flavour: str | None
    promised: str
    installed: str
    source: str
    """Where it came from (``DriverChoice.source`` in wizard/core/selection.py)."""

    def line(self) -> str:
        kind = f"R{self.branch}" + (f", {self.flavour}" if self.flavour else "")
        said = f"driver: {self.installed} installed ({kind})"
        if self.installed == self.promised:
            return said
        archive = ARCHIVES.get(self.source, "the package archive")
        return (
            f"{said}. Choose named {self.promised}: {archive} installs its own newest release "
            "of the branch, and it was not the one gpuwizard's table knew as the newest"
        )


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
        *,
        driver: InstalledDriver | None = None,
        cli_args: tuple[str, ...] = (),
        left: tuple[str, ...] = (),
        enter: tuple[str, ...] = (),
    ) -> None:
        """``bench``: the benchmark's headline and results file, when one ran; ``exports``: the
        files written on the Export screen; ``driver``: the driver this run installed;
        ``cli_args``: what chooses this machine on the command line (``--simulate PROFILE``);
        ``left``: the titles of the steps the person skipped (the setup is not complete);
        ``enter``: the commands that use the environment, where ``source ENV/bin/activate``
        and ``python`` are not them (a conda environment, one that was here already)."""
        super().__init__()
        self.exports = exports or []
        self.summary = summary
        self.env_path = env_path
        self.logs = logs
        self.bench = bench
        self.driver = driver
        self.cli_args = cli_args
        self.left = left
        self.enter = enter

    def compose(self) -> ComposeResult:
        summary = Table.grid(padding=(0, 0, 0, 2))  # a long line wraps under itself
        summary.add_column()
        for line in self.summary:
            if self.driver is not None and line.startswith("driver:"):
                line = self.driver.line()
            summary.add_row(plain(line))
        text = BreakingText()  # a results path breaks after a /, never mid-name
        if self.bench:
            text.append(*part(f"\nBenchmark: {self.bench}\n"))
        if self.exports:
            text.append("\nExported:\n")
            text.append(*part("".join(f"  {path}\n" for path in self.exports)))
        text.append("\nNext:", style="bold")
        with VerticalScroll(id="done-body"):
            yield Static(self.headline())
            yield Static(summary)
            yield Static(text)
            yield Static(self.next_steps())
            yield Static(plain(f"\nLogs: {self.logs}", "dim"))

    def headline(self) -> Text:
        """Set up; or, with steps the person skipped, not quite: each is named."""
        if not self.left:
            return Text("Done: the GPU server is set up.\n", style="bold green")
        text = Text("Done, except what you skipped: ", style="bold yellow")
        text.append(*part("; ".join(f"⊘ {title}" for title in self.left), "bold yellow"))
        text.append(
            *part(". The setup is not complete without it: `gpuwizard doctor` checks it.\n")
        )
        return text

    def next_steps(self) -> Group:
        """The environment's commands, then each gpuwizard command beside what it does (the
        meaning wraps under itself, never the command). On a simulated run the environment is
        in the simulation's sandbox: no command to enter it here."""
        shell = Text()
        if not self.cli_args and self.enter:
            shell.append(*part("\n".join(f"  {line}" for line in self.enter)))
        elif not self.cli_args:
            shell.append(*part(f"  source {self.env_path}/bin/activate\n"))
            shell.append('  python -c "import torch; print(torch.cuda.device_count())"')
        gpuwizard = gpuwizard_command(self.cli_args)
        commands = Table.grid(padding=(0, 2))
        commands.add_column(no_wrap=True)
        commands.add_column(style="dim")
        for command, meaning in (
            ("detect", "the machine as it is now"),
            ("bench", f"the benchmark{' again' if self.bench else ''}, without the wizard"),
            ("export", "deploy.sh, Dockerfile, answers.yaml, Ansible, cloud-init"),
        ):
            commands.add_row(plain(f"  {gpuwizard} {command}"), plain(meaning))
        return Group(*([shell] if shell else []), commands)

    def action_finish(self) -> None:
        self.answer(Continue())
