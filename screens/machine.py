"""MachineView: the host at a glance, with the sizing findings coloured by severity.

Every value here was read from the machine: each cell is plain text (``plain``), never markup."""

from __future__ import annotations

from collections import Counter

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuwizard.core.facts import HostFacts, NvmlOk, no_gpu_in_words
from gpuwizard.core.machine_words import (
    disk_words,
    fabric_words,
    nic_words,
    platform_words,
    torch_env_lines,
)
from gpuwizard.recommend.sizing import Finding
from gpuwizard.screens.plain import part, plain
from gpuwizard.screens.shell import StageView
from gpuwizard.setup.flow import Continue, Revisit, when
from gpuwizard.setup.stages import AfterSetup, SetUp

SEVERITY_STYLE = {"ok": "green", "info": "cyan", "warning": "yellow", "error": "bold red"}
SEVERITY_MARK = {"ok": "✓", "info": "i", "warning": "!", "error": "✗"}


def host_table(facts: HostFacts) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", width=9)
    table.add_column()
    counts = Counter(
        (g.model.name, g.model.arch, g.model.sm, g.model.memory_gib) for g in facts.hardware.gpus
    )
    for (name, arch, sm, memory), n in counts.items():
        mem = f", {memory} GB" if memory else ""
        table.add_row("GPU", plain(f"{n}× {name} ({arch}, {sm or '?'}{mem})"))
    if not counts:
        table.add_row("GPU", Text(no_gpu_in_words(facts.hardware), style="yellow"))
    if facts.hardware.nvswitches or facts.hardware.infiniband:
        table.add_row("Fabric", plain(fabric_words(facts.hardware)))
    os = facts.os.pretty_name if facts.os else "unknown"
    table.add_row("OS", plain(f"{os} · kernel {facts.boot.kernel} · {facts.platform.arch}"))
    if platform := platform_words(facts.platform):
        table.add_row("Runs in", plain(platform))
    nvml = facts.boot.nvml
    driver = (
        f"{nvml.driver_version} (CUDA {nvml.cuda_driver_version})"
        if isinstance(nvml, NvmlOk)
        else nvml.reason
    )
    table.add_row("Driver", plain(driver))
    boot = facts.boot
    nouveau = "loaded" if boot.nouveau_loaded else "not loaded"
    table.add_row(
        "Boot",
        plain(f"Secure Boot {boot.secure_boot} · nouveau {nouveau} · cloud-init {boot.cloud_init}"),
    )
    cpu = f"{facts.hardware.cpu_count} CPUs" + (
        f" ({facts.hardware.cpu_model})" if facts.hardware.cpu_model else ""
    )
    table.add_row("Machine", plain(f"{cpu} · {facts.hardware.memory_mib // 1024} GiB RAM"))
    disks = ", ".join(disk_words(d) for d in facts.hardware.disks)
    table.add_row("Disks", plain(disks or "none found"))
    nics = ", ".join(nic_words(n) for n in facts.hardware.nics)
    table.add_row("Network", plain(nics or "none found"))
    table.add_row("Python", plain(facts.python.system_python or "none"))
    for index, line in enumerate(torch_env_lines(facts)):
        table.add_row("PyTorch" if index == 0 else "", plain(line))
    return table


def findings_table(findings: tuple[Finding, ...]) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(width=1)
    table.add_column()
    for finding in findings:
        style = SEVERITY_STYLE[finding.severity]
        table.add_row(
            Text(SEVERITY_MARK[finding.severity], style=style),
            Text.assemble(part(finding.title, style), part(f": {finding.reason}")),
        )
    return table


class MachineView(StageView):
    """Answers Continue (only when there is a GPU to set up); on a machine gpuwizard set up,
    also Revisit: verify, benchmark or export that setup again."""

    BINDINGS = [
        Binding("enter", "proceed", "Continue", priority=True),
        Binding("v", "revisit('verify')", "Verify"),
        Binding("m", "revisit('benchmark')", "Benchmark"),
        Binding("e", "revisit('export')", "Export"),
    ]
    DEFAULT_CSS = """
    MachineView #detect-body { padding: 0 1; }
    MachineView .section { margin-top: 1; text-style: bold; color: $accent; }
    """

    def __init__(
        self,
        facts: HostFacts,
        findings: tuple[Finding, ...],
        can_continue: bool,
        set_up: SetUp | None = None,
    ) -> None:
        """``set_up``: the run that finished setting this machine up, when there is one."""
        super().__init__()
        self.facts = facts
        self.findings = findings
        self.can_continue = can_continue
        self.set_up = set_up

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="detect-body"):
            if self.set_up is not None:
                yield Static(set_up_text(self.set_up), id="set-up")
            yield Static("This machine", classes="section")
            yield Static(host_table(self.facts))
            yield Static("Sizing", classes="section")
            yield Static(findings_table(self.findings))
            if not self.can_continue:
                yield Static(
                    Text(
                        "No NVIDIA GPU to set up on this machine. Press q to leave.",
                        style="bold yellow",
                    ),
                    classes="section",
                )

    def check_action(self, action: str, _parameters: tuple[object, ...]) -> bool | None:
        """Continue is offered only where there is a GPU to set up, and the finished setup's
        keys only where there is one (no key that does nothing)."""
        if action == "proceed":
            return self.can_continue
        if action == "revisit":
            return self.set_up is not None
        return True

    def action_proceed(self) -> None:
        if self.can_continue:
            self.answer(Continue())

    def action_revisit(self, stage: AfterSetup) -> None:
        if self.set_up is not None:
            self.answer(Revisit(stage))


def set_up_text(set_up: SetUp) -> Text:
    """The finished setup, and what the person may do with it now."""
    text = Text("gpuwizard has set this machine up", style="bold green")
    text.append(*part(f" ({set_up.run_id}, finished {when(set_up.finished_at)})"))
    if set_up.left:
        text.append(*part(f"; you skipped: {'; '.join(set_up.left)}", "yellow"))
    text.append(
        *part(". v shows its verification, m benchmarks it, e exports it; Enter plans anew.")
    )
    return text
