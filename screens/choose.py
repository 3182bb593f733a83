"""ChooseView: the recommendation with its reasons; change a wish and see at once whether it
still fits and why not; the rejected alternatives on demand.

The choices are made from the wishes' declarations (``wizard/core/request.py``): a select for
each wish offered as a list of values, a text field for each typed one, and one list of
checkboxes for the rest; a new wish appears here without a change to this view. What a host
offers for each wish comes from the front end (``Offers``). Reasons quote the machine's facts,
so every value is plain text (``plain``), never markup."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Input, Label, Select, SelectionList, Static

from gpuwizard.core.request import WISHES, SetupRequest, Wish, form_problem, wish_named
from gpuwizard.recommend.result import Recommendation, Refusal
from gpuwizard.screens.plain import plain
from gpuwizard.screens.shell import StageView
from gpuwizard.setup.flow import Back, Decided
from gpuwizard.steps import COSTS

Result = Recommendation | Refusal
Recompute = Callable[[SetupRequest], Result]
Offers = Callable[[SetupRequest, Result], Mapping[str, tuple[str, ...]]]
"""What this host offers for each wish now, by name: the values of a select (a wish offered no
values is not shown); for a checkbox, () hides it and a value is said beside its label (the
installed driver's version beside "Keep driver"). A wish not named offers its declared values."""
AUTO = "auto"
TORCH_DOWNLOAD_GIB = COSTS["install-torch"].download_mib / 1024
"""What installing PyTorch in a new environment downloads, as Review counts it."""
"""The select's value for "let gpuwizard pick" (the request's None)."""


def bullet(text: str, mark: str = "·", style: str = "") -> Table:
    """One item of a list; wrapped lines hang under the text, not under the mark."""
    row = Table.grid()
    row.add_column(width=4, no_wrap=True)
    row.add_column()
    row.add_row(f"  {mark}", plain(text, style))
    return row


def result_text(result: Result, here: bool = False) -> Group:
    """The recommendation as the card shows it; ``here``: the PyTorch already on the machine is
    used (its torch and Python are that environment's, not the recommendation's)."""
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
    if here:
        fields.add_row("PyTorch", plain("the one here, as it is (above)"))
    else:
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
    if here:  # the recommendation's reasons are about the release it would install: not used
        return Group(*parts)
    parts.append(Text("Why", style="bold"))
    parts += [bullet(r) for r in result.reasons]
    parts += [bullet(f"UNCONFIRMED: {u}", "?", "yellow") for u in result.unconfirmed]
    return Group(*parts)


def builds_text(
    tried: list[tuple[str, Result]], title: str = "CUDA builds of this release"
) -> Group:
    """Each value of a choice: fits here, or why not (those are not offered)."""
    if not tried:
        return Group()
    parts: list[RenderableType] = [Text(title, style="bold")]
    for variant, result in tried:
        if isinstance(result, Recommendation):
            parts.append(bullet(f"{variant}: fits ({fits_with(result)})", "✓", "green"))
        else:
            parts.append(bullet(f"{variant}: not offered: {build_refusal(result)}", "✗", "dim"))
    return Group(*parts)


def fits_with(result: Recommendation) -> str:
    d = result.driver
    driver = f"keep {d.version}" if d.action == "keep" else f"R{d.branch} {d.flavor or ''}".strip()
    return f"driver {driver}, torch {result.torch.version} {result.torch.variant}"


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


def _shown(wish: Wish, value: str, default: object) -> str:
    """A value as the Choose view lists it ("R580"; "venv (default)")."""
    return wish.shown_as.format(value) + (" (default)" if value == default else "")


class ChooseView(StageView):
    """Answers Decided with the request the person settled on, or Back."""

    BINDINGS = [
        Binding("c", "proceed", "Continue"),
        Binding("w", "toggle_rejected", "Why not others"),
        Binding("escape,b", "back", "Back"),
    ]
    DEFAULT_CSS = """
    ChooseView #choices { width: 34; padding: 0 1; border-right: vkey $primary-darken-2; }
    ChooseView #choices Label { margin-top: 1; text-style: bold; }
    ChooseView #choices Label.-problem { margin-top: 0; text-style: none; color: $error; }
    ChooseView #choices Select { width: 100%; }
    ChooseView #choices Input { width: 100%; }
    ChooseView #choices SelectionList { height: auto; max-height: 9; border: none; padding: 0; }
    ChooseView #choices Select:focus > SelectCurrent { border: tall $accent; background-tint: $accent 20%; }
    ChooseView #choices SelectionList:focus { background-tint: $accent 20%; }
    ChooseView #choices Label.-focused { color: $accent; }
    ChooseView #result { padding: 0 1; }
    """

    def __init__(
        self,
        result: Result,
        request: SetupRequest,
        recompute: Recompute,
        offers: Offers,
        note: str | None = None,
        *,
        here: Mapping[str, str] | None = None,
    ) -> None:
        """``note``: why the person is asked again (the machine changed under the last run);
        ``here``: each PyTorch environment already on the machine, in words with its fit."""
        super().__init__()
        self.note = note
        self.here = dict(here or {})
        self.result = result
        self.request = request
        self.recompute = recompute
        self.offers = offers
        self.show_rejected = False
        self.problems: dict[str, str] = {}
        """Wishes typed in a form they cannot take, and why (the request keeps the last good)."""
        self.checked: tuple[str, ...] = ()
        """The wishes shown as checkboxes."""

    def offered(self, wish: Wish) -> tuple[str, ...]:
        return self.offers(self.request, self.result).get(wish.name, wish.values)

    def compose(self) -> ComposeResult:
        with Horizontal():
            with VerticalScroll(id="choices", can_focus=False):
                checks: list[tuple[str, str, bool]] = []
                for wish in WISHES:
                    if wish.widget == "check":
                        checks += self.checkbox(wish)
                    elif wish.widget == "select" and self.offered(wish):
                        yield Label(wish.label)
                        yield self.select(wish)
                    elif wish.widget == "input":
                        yield Label(wish.label)
                        yield Input(str(self.request.value(wish.name)), id=f"wish-{wish.name}",
                                    select_on_focus=False)  # fmt: skip
                        yield Label("", id=f"problem-{wish.name}", classes="-problem")
                self.checked = tuple(name for _, name, _ in checks)
                yield Label("Also install")
                yield SelectionList[str](*checks, id="extras")
            with VerticalScroll(id="result"):
                if self.note:
                    yield Static(Text(self.note, style="bold yellow"), id="note")
                yield Static(self.here_text(), id="here")
                yield Static(
                    result_text(self.result, self.request.use_env is not None), id="result-text"
                )
                yield Static(self.tried_text(), id="builds")
                yield Static(rejected_text(self.result, self.show_rejected), id="rejected")

    def select(self, wish: Wish) -> Select[str]:
        value = self.request.value(wish.name)
        return Select(
            self.options_of(wish), value=AUTO if value is None else str(value),
            allow_blank=False, id=f"wish-{wish.name}",
        )  # fmt: skip

    def checkbox(self, wish: Wish) -> list[tuple[str, str, bool]]:
        offered = self.offers(self.request, self.result).get(wish.name)
        if offered == ():
            return []
        label = f"{wish.label} {offered[0]}" if offered else wish.label
        return [(label, wish.name, bool(self.request.value(wish.name)))]

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """The focused choice's label is marked (▸) and coloured: focus is always visible."""
        box = self.query_one("#choices", VerticalScroll)
        label: Label | None = None
        for child in box.children:
            if isinstance(child, Label) and not child.has_class("-problem"):
                label = child
                name = str(child.content).removeprefix("▸ ")
                child.update(name)
                child.remove_class("-focused")
            elif child is event.widget and label is not None:
                label.update(f"▸ {label.content}")
                label.add_class("-focused")

    # ------------------------------------------------------------- each value, as it fares
    def tried(self, wish: Wish) -> list[tuple[str, Result]]:
        """Each value the host offers for a tried wish, as the engine judges it here, the other
        wishes as chosen (and those it ``holds`` at what the recommendation resolved)."""
        if not wish.tried:
            return []
        base = self.request
        if isinstance(self.result, Recommendation):
            resolved = self.result.resolved(base)
            for held in wish.holds:
                if base.value(held) is None:
                    base = base.changed(held, resolved.value(held))
        return [
            (value, self.recompute(base.changed(wish.name, value))) for value in self.offered(wish)
        ]

    def options_of(self, wish: Wish) -> list[tuple[str, str]]:
        """The values to choose from: every one offered, or (a tried wish) those that work here;
        the others are only explained."""
        if wish.tried:
            values = [v for v, r in self.tried(wish) if isinstance(r, Recommendation)]
        else:
            values = list(self.offered(wish))
        default = SetupRequest().value(wish.name)
        auto = [(wish.auto, AUTO)] if default is None else []
        return [*auto, *((_shown(wish, v, default), v) for v in values)]

    def tried_text(self) -> Group:
        """Every value of every tried wish: fits, or why it is not offered."""
        parts = []
        for wish in WISHES:
            if wish.tried and wish.widget == "select" and self.offered(wish):
                tried = [(wish.shown_as.format(v), r) for v, r in self.tried(wish)]
                parts.append(builds_text(tried, wish.label))
        return Group(*parts)

    # ------------------------------------------------------------------------ changes
    @on(Select.Changed)
    def change_choice(self, event: Select.Changed) -> None:
        """One handler for every select: the request changes, then the others are judged again."""
        name = (event.select.id or "").removeprefix("wish-")
        value = str(event.value)
        self.request = self.request.changed(name, None if value == AUTO else value)
        self.refresh_choices()
        self.refresh_result()

    @on(Input.Changed)
    def change_text(self, event: Input.Changed) -> None:
        """A typed wish counts once its form is right; until then it says why, under the field."""
        name = (event.input.id or "").removeprefix("wish-")
        why = form_problem(wish_named(name), event.value)
        self.query_one(f"#problem-{name}", Label).update(f"✗ {why}" if why else "")
        if why:
            self.problems[name] = why
            return
        self.problems.pop(name, None)
        self.request = self.request.changed(name, event.value)
        self.refresh_result()

    @on(SelectionList.SelectedChanged, "#extras")
    def change_extras(self, event: SelectionList.SelectedChanged[str]) -> None:
        chosen = set(event.selection_list.selected)
        for name in self.checked:
            self.request = self.request.changed(name, name in chosen)
        self.refresh_choices()
        self.refresh_result()

    def refresh_choices(self) -> None:
        """Each tried wish's list again: a value that stopped working is dropped (back to auto)."""
        for wish in WISHES:
            if not (wish.tried and wish.widget == "select" and self.offered(wish)):
                continue
            select = self.query_one(f"#wish-{wish.name}", Select)
            options = self.options_of(wish)
            if self.request.value(wish.name) not in {value for _, value in options}:
                self.request = self.request.changed(wish.name, None)
            value = self.request.value(wish.name)
            with select.prevent(Select.Changed):
                select.set_options(options)
                select.value = AUTO if value is None else str(value)

    def here_text(self) -> Group:
        """The PyTorch already on the machine: the one chosen, used as it is, beside what the
        recommendation would install instead; or each one found, and whether it can be used."""
        chosen = self.request.use_env
        if chosen is None:
            lines = [
                bullet(
                    f"{said}" + (" (choose it under “PyTorch here”)" if path in self.usable else "")
                )
                for path, said in self.here.items()
            ]
            return (
                Group(Text("PyTorch already here", style="bold"), *lines, Text(""))
                if lines
                else Group()
            )
        parts: list[RenderableType] = [
            Text("✓ Uses the PyTorch here, as it is", style="bold green"),
            bullet(self.here.get(chosen, chosen)),
            bullet("nothing is downloaded or installed in it, and the driver stays as it is"),
        ]
        instead = self.recompute(self.request.changed("use_env", None))
        if isinstance(instead, Recommendation):
            t = instead.torch
            parts.append(bullet(
                f"not chosen: a new environment with torch {t.version} {t.variant}, about "
                f"{TORCH_DOWNLOAD_GIB:.1f} GiB to download (“no: a new environment” above)"
            ))  # fmt: skip
        parts.append(Text(""))
        return Group(*parts)

    @property
    def usable(self) -> tuple[str, ...]:
        return self.offers(self.request, self.result).get("use_env", ())

    def refresh_result(self) -> None:
        self.query_one("#here", Static).update(self.here_text())
        self.result = self.recompute(self.request)
        self.query_one("#result-text", Static).update(
            result_text(self.result, self.request.use_env is not None)
        )
        self.query_one("#builds", Static).update(self.tried_text())
        self.query_one("#rejected", Static).update(rejected_text(self.result, self.show_rejected))

    def action_toggle_rejected(self) -> None:
        self.show_rejected = not self.show_rejected
        rejected = self.query_one("#rejected", Static)
        rejected.update(rejected_text(self.result, self.show_rejected))
        if self.show_rejected:  # bring them into view: they sit below the reasons
            self.call_after_refresh(
                self.query_one("#result", VerticalScroll).scroll_to_widget, rejected, top=True
            )

    def action_proceed(self) -> None:
        if self.problems:
            name, why = next(iter(self.problems.items()))
            self.notify(f"{wish_named(name).label}: {why}", severity="warning")
        elif isinstance(self.result, Recommendation):
            self.answer(Decided(self.request))
        else:
            self.notify("This combination does not fit; change a choice first.", severity="warning")

    def action_back(self) -> None:
        self.answer(Back())
