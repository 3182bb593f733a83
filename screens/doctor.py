"""DoctorScreen: the doctor's findings over whatever stage is showing, coloured by severity.

It gets either a finished ``Report`` or a function that makes one; the function runs in a
worker thread (it reads the machine), so the screen shows "Checking…" at once. Esc closes it;
r checks again. The screen never reads the machine itself. Findings quote dmesg and logs: every
value is shown cleaned and plain (``plain``), never as markup.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerState

from gpuwizard.doctor.findings import Finding, Report
from gpuwizard.screens.plain import part, plain

STYLES = {"problem": "bold red", "warn": "bold yellow", "unknown": "bold magenta", "ok": "green"}
BADGES = {"problem": "✗ problem", "warn": "! warning", "unknown": "? not checked", "ok": "✓ ok"}
EVIDENCE_SHOWN = 4


def finding_view(finding: Finding) -> tuple[Text, RenderableType]:
    """One finding as (badge, body): the title; unless it is fine, explanation, fix, evidence."""
    badge = Text(BADGES[finding.severity], style=STYLES[finding.severity])
    title = plain(finding.title, "bold")
    if finding.severity == "ok":
        return badge, title
    parts: list[RenderableType] = [title, plain(finding.explanation)]
    if finding.fix:
        parts.append(Text.assemble(("fix: ", "bold cyan"), part(finding.fix, "cyan")))
    parts += [plain(f"· {line}", "dim") for line in finding.evidence[:EVIDENCE_SHOWN]]
    return badge, Group(*parts, Text(""))


def report_view(report: Report) -> RenderableType:
    """The summary, then one row per finding: the badge in its own column, the text beside it."""
    rows = Table.grid(padding=(0, 1))
    rows.add_column(no_wrap=True, width=len(max(BADGES.values(), key=len)))
    rows.add_column()
    for finding in report.findings:
        rows.add_row(*finding_view(finding))
    parts: list[RenderableType] = [plain(report.summary, "bold"), Text(""), rows]
    if report.unread:
        parts += [Text("\nCould not read:", style="bold")]
        parts += [plain(f"  {why}", "dim") for why in report.unread]
    return Group(*parts)


class DoctorScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q,d", "close", "Close"),
        Binding("r", "again", "Check again"),
    ]
    DEFAULT_CSS = """
    DoctorScreen { align: center middle; }
    DoctorScreen > #doctor-box {
        width: 96%; max-width: 120; height: 90%; border: thick $primary; padding: 0 1;
        background: $surface;
    }
    DoctorScreen #doctor-title { padding: 0 0 1 0; }
    """

    def __init__(self, source: Report | Callable[[], Report]) -> None:
        super().__init__()
        self.source = source
        self.report: Report | None = source if isinstance(source, Report) else None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="doctor-box"):
            yield Static(
                Text("Doctor: known problems on this machine", style="bold"), id="doctor-title"
            )
            yield Static(Text("Checking this machine…", style="dim"), id="doctor-body")
        yield Footer()

    def on_mount(self) -> None:
        if self.report is not None:
            self.show(self.report)
        else:
            self.examine()

    @work(thread=True, exclusive=True, group="doctor", exit_on_error=False)
    def examine(self) -> None:
        """Run the doctor off the UI thread: it reads files, runs dmesg and asks NVML."""
        assert callable(self.source)
        report = self.source()
        self.app.call_from_thread(self.show, report)

    def show(self, report: Report) -> None:
        self.report = report
        self.query_one("#doctor-body", Static).update(report_view(report))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR and event.worker.group == "doctor":
            why = plain(f"The doctor could not finish: {event.worker.error}", "bold red")
            self.query_one("#doctor-body", Static).update(why)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A report handed over whole cannot be made again: no "Check again" then."""
        del parameters
        return callable(self.source) if action == "again" else True

    def action_again(self) -> None:
        if callable(self.source):
            self.query_one("#doctor-body", Static).update(
                Text("Checking this machine…", style="dim")
            )
            self.examine()

    def action_close(self) -> None:
        self.dismiss(None)
