"""RecommendView: the recommendation with its reasons; change a choice and see at once whether
it still fits and why not; the rejected alternatives on demand. Reasons quote the machine's
facts, so every value is plain text (``plain``), never markup."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Label, Select, SelectionList, Static

from gpuwizard.recommend.planner import Options
from gpuwizard.recommend.result import Choices, Recommendation, Refusal
from gpuwizard.screens.plain import plain
from gpuwizard.screens.shell import StageView
from gpuwizard.setup.flow import Back, Decided
from gpuwizard.setup.request import SetupRequest

Result = Recommendation | Refusal
Recompute = Callable[[Choices, Options], Result]

EXTRAS = (
    ("needs_nvcc", "CUDA toolkit (nvcc)"),
    ("cudnn", "cuDNN 9"),
    ("docker", "Docker + NVIDIA toolkit"),
    ("dcgm", "DCGM monitoring"),
    ("nccl", "NCCL multi-node settings"),
    ("hold_driver", "Hold driver packages"),
)


def bullet(text: str, mark: str = "·", style: str = "") -> Table:
    """One item of a list; wrapped lines hang under the text, not under the mark."""
    row = Table.grid()
    row.add_column(width=4, no_wrap=True)
    row.add_column()
    row.add_row(f"  {mark}", plain(text, style))
    return row


def result_text(result: Result) -> Group:
    if isinstance(result, Refusal):
        parts: list[RenderableType] = [
            Text("✗ Does not fit: ", style="bold red") + plain(result.reason)
        ]
        parts += [bullet(r) for r in result.reasons if r]
        return Group(*parts)
    d, t, p = result.driver, result.torch, result.python
    status = "✓ Fits" if result.status == "ok" else "✓ Fits, after the changes below"
    flavor = f" {d.flavor}" if d.flavor else ""
    driver = (
        f"keep {d.version}"
        if d.action == "keep"
        else f"{d.action} R{d.branch}{flavor} ({d.version})"
    )
    where = "system" if p.action == "use_system" else "installed beside the system one"
    fields = Table.grid(padding=(0, 1))
    fields.add_column(style="bold", no_wrap=True)
    fields.add_column()
    fields.add_row("Driver", plain(driver))
    fields.add_row(
        "PyTorch",
        plain(f"torch {t.version} {t.variant}, torchvision {t.torchvision or 'UNCONFIRMED'}"),
    )
    fields.add_row("Python", plain(f"{p.version} ({where})"))
    if result.cuda_toolkit:
        fields.add_row("Toolkit", plain(f"CUDA {result.cuda_toolkit.version}"))
    parts = [Text(status, style="bold green"), fields]
    if result.changes:
        parts.append(Text("Changes first", style="bold yellow"))
        parts += [bullet(c) for c in result.changes]
    parts.append(Text("Why", style="bold"))
    parts += [bullet(r) for r in result.reasons]
    parts += [bullet(f"UNCONFIRMED: {u}", "?", "yellow") for u in result.unconfirmed]
    return Group(*parts)


def builds_text(tried: list[tuple[str, Result]]) -> Group:
    """Each CUDA build of the release: fits here, or why not (those are not offered)."""
    if not tried:
        return Group()
    parts: list[RenderableType] = [Text("CUDA builds of this release", style="bold")]
    for variant, result in tried:
        if isinstance(result, Recommendation):
            parts.append(bullet(f"{variant}: fits (driver R{result.driver.branch})", "✓", "green"))
        else:
            parts.append(bullet(f"{variant}: not offered: {build_refusal(result)}", "✗", "dim"))
    return Group(*parts)


def build_refusal(refusal: Refusal) -> str:
    """The reason a build cannot work, without the engine's "nothing fits ..." preamble."""
    return (
        refusal.reason.split(": ", 1)[-1]
        if refusal.reason.startswith("nothing fits")
        else refusal.reason
    )


def rejected_text(result: Result, shown: bool) -> Group:
    """The alternatives not chosen, or one line saying how to see them."""
    if not result.rejected:
        return Group()
    if not shown:
        count = len(result.rejected)
        return Group(Text(f"{count} alternatives not chosen: press w to see why", style="dim"))
    return Group(
        Text("Not chosen", style="bold"),
        *(bullet(f"{r.option}: {r.reason}") for r in result.rejected),
    )


class RecommendView(StageView):
    """Answers Decided with the request the person settled on, or Back."""

    BINDINGS = [
        Binding("c", "proceed", "Continue"),
        Binding("w", "toggle_rejected", "Why not others"),
        Binding("escape,b", "back", "Back"),
    ]
    DEFAULT_CSS = """
    RecommendView #choices { width: 34; padding: 0 1; border-right: vkey $primary-darken-2; }
    RecommendView #choices Label { margin-top: 1; text-style: bold; }
    RecommendView #choices Select { width: 100%; }
    RecommendView #choices SelectionList { height: auto; max-height: 8; border: none; padding: 0; }
    RecommendView #choices Select:focus > SelectCurrent { border: tall $accent; background-tint: $accent 20%; }
    RecommendView #choices SelectionList:focus { background-tint: $accent 20%; }
    RecommendView #choices Label.-focused { color: $accent; }
    RecommendView #result { padding: 0 1; }
    """

    def __init__(
        self,
        result: Result,
        choices: Choices,
        options: Options,
        recompute: Recompute,
        torch_versions: list[str],
        note: str | None = None,
        builds: Mapping[str, tuple[str, ...]] | None = None,
        installed_driver: str | None = None,
    ) -> None:
        """``note``: why the person is asked again (the machine changed under the last run);
        ``builds``: each torch release's CUDA builds, to choose one (each tried with the engine:
        one that cannot work here is explained, not offered)."""
        super().__init__()
        self.builds = builds or {}
        self.installed_driver = installed_driver
        """The driver already on the machine: only then is keeping it a choice."""
        self.note = note
        self.result = result
        self.choices = choices
        self.options = options
        self.recompute = recompute
        self.torch_versions = torch_versions
        self.show_rejected = False

    def compose(self) -> ComposeResult:
        with Horizontal():
            with VerticalScroll(id="choices", can_focus=False):
                yield Label("PyTorch")
                versions = [
                    ("latest (confirmed)", "latest"),
                    *((v, v) for v in self.torch_versions),
                ]
                yield Select(
                    versions, value=self.choices.torch or "latest", allow_blank=False, id="torch"
                )
                if self.builds:
                    yield Label("CUDA build")
                    yield Select(
                        self.build_options(), value=self.choices.variant or "auto",
                        allow_blank=False, id="variant",
                    )  # fmt: skip
                yield Label("Environment")
                kinds = [("venv (default)", "venv"), ("conda (Miniforge)", "conda")]
                yield Select(kinds, value=self.options.env_kind, allow_blank=False, id="env")
                yield Label("Also install")
                selected = [(label, key, bool(getattr(self.options, key))) for key, label in EXTRAS]
                if self.installed_driver:
                    keep = f"Keep driver {self.installed_driver}"
                    selected.insert(0, (keep, "keep_driver", self.choices.keep_driver))
                yield SelectionList[str](*selected, id="extras")
            with VerticalScroll(id="result"):
                if self.note:
                    yield Static(Text(self.note, style="bold yellow"), id="note")
                yield Static(result_text(self.result), id="result-text")
                yield Static(builds_text(self.tried_builds()), id="builds")
                yield Static(rejected_text(self.result, self.show_rejected), id="rejected")

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """The focused choice's label is marked (▸) and coloured: focus is always visible."""
        box = self.query_one("#choices", VerticalScroll)
        label: Label | None = None
        for child in box.children:
            if isinstance(child, Label):
                label = child
                name = str(child.content).removeprefix("▸ ")
                child.update(name)
                child.remove_class("-focused")
            elif child is event.widget and label is not None:
                label.update(f"▸ {label.content}")
                label.add_class("-focused")

    # ---------------------------------------------------------------- CUDA builds
    def torch_release(self) -> str | None:
        """The release the builds belong to: the one chosen, else the one recommended."""
        if self.choices.torch in self.builds:
            return self.choices.torch
        if isinstance(self.result, Recommendation):
            return self.result.torch.version
        return self.choices.torch

    def tried_builds(self) -> list[tuple[str, Result]]:
        """Each CUDA build of the release, as the engine judges it on this machine."""
        release = self.torch_release()
        if release is None:
            return []
        pinned = replace(self.choices, torch=self.choices.torch or release)
        return [
            (variant, self.recompute(replace(pinned, variant=variant), self.options))
            for variant in self.builds.get(release, ())
        ]

    def build_options(self) -> list[tuple[str, str]]:
        """The builds that work here, to choose from; the others are only explained."""
        working = [v for v, r in self.tried_builds() if isinstance(r, Recommendation)]
        return [("recommended", "auto"), *((v, v) for v in working)]

    @on(Select.Changed, "#variant")
    def change_variant(self, event: Select.Changed) -> None:
        value = str(event.value)
        self.choices = replace(self.choices, variant=None if value == "auto" else value)
        self.refresh_result()

    def refresh_builds(self) -> None:
        if not self.builds:
            return
        select = self.query_one("#variant", Select)
        options = self.build_options()
        if self.choices.variant not in {value for _, value in options}:
            self.choices = replace(self.choices, variant=None)
        with select.prevent(Select.Changed):
            select.set_options(options)
            select.value = self.choices.variant or "auto"

    def refresh_result(self) -> None:
        self.result = self.recompute(self.choices, self.options)
        self.query_one("#result-text", Static).update(result_text(self.result))
        self.query_one("#builds", Static).update(builds_text(self.tried_builds()))
        self.query_one("#rejected", Static).update(rejected_text(self.result, self.show_rejected))

    @on(Select.Changed, "#torch")
    def change_torch(self, event: Select.Changed) -> None:
        value = str(event.value)
        self.choices = replace(self.choices, torch=None if value == "latest" else value)
        self.refresh_builds()
        self.refresh_result()

    @on(Select.Changed, "#env")
    def change_env(self, event: Select.Changed) -> None:
        self.options = replace(self.options, env_kind="conda" if event.value == "conda" else "venv")
        self.refresh_result()

    @on(SelectionList.SelectedChanged, "#extras")
    def change_extras(self, event: SelectionList.SelectedChanged[str]) -> None:
        chosen = set(event.selection_list.selected)
        self.options = replace(
            self.options,
            needs_nvcc="needs_nvcc" in chosen,
            cudnn="cudnn" in chosen,
            docker="docker" in chosen,
            dcgm="dcgm" in chosen,
            nccl="nccl" in chosen,
            hold_driver="hold_driver" in chosen,
        )
        self.choices = replace(
            self.choices, needs_nvcc="needs_nvcc" in chosen, keep_driver="keep_driver" in chosen
        )
        self.refresh_result()

    def action_toggle_rejected(self) -> None:
        self.show_rejected = not self.show_rejected
        rejected = self.query_one("#rejected", Static)
        rejected.update(rejected_text(self.result, self.show_rejected))
        if self.show_rejected:  # bring them into view: they sit below the reasons
            self.call_after_refresh(
                self.query_one("#result", VerticalScroll).scroll_to_widget, rejected, top=True
            )

    def action_proceed(self) -> None:
        if isinstance(self.result, Recommendation):
            self.answer(Decided(SetupRequest(self.choices, self.options)))
        else:
            self.notify("This combination does not fit; change a choice first.", severity="warning")

    def action_back(self) -> None:
        self.answer(Back())
