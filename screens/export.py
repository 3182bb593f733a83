"""ExportView: pick formats, preview each with syntax highlighting, write them, see the paths.

Every export is rendered from the one reviewed plan (wizard/export/); the screen gets a
``render`` function (format name -> files, or ExportError), a ``write`` function (folder,
files -> paths) and an ``existing`` one (folder, names -> the names already there), so it never
touches the disk itself. Files already in the folder are replaced only once the person says so.
Answers Exported with the written paths.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Input, SelectionList, Static

from gpuwizard.core.machine_words import counted
from gpuwizard.core.safetext import clean
from gpuwizard.export.formats import ExportFile
from gpuwizard.export.source import ExportError
from gpuwizard.screens.modals import ConfirmScreen
from gpuwizard.screens.plain import part, plain
from gpuwizard.screens.shell import StageView
from gpuwizard.setup.flow import Exported

Render = Callable[[str], list[ExportFile]]
Write = Callable[[Path, list[ExportFile]], list[Path]]
Existing = Callable[[Path, list[str]], list[str]]


def nothing_there(_folder: Path, _names: list[str]) -> list[str]:
    return []


def preview(files: Sequence[ExportFile]) -> Group:
    parts: list[RenderableType] = []
    for file in files:
        parts.append(plain(f"── {file.name} (mode {file.mode:o})", "bold"))
        if file.note:
            parts.append(plain(f"   {file.note}", "italic"))
        parts.append(Syntax(clean(file.content), file.language, theme="ansi_dark", word_wrap=True))
    return Group(*parts)


class ExportView(StageView):
    BINDINGS = [
        Binding("w", "write", "Write files"),
        Binding("c", "proceed", "Continue"),
    ]
    DEFAULT_CSS = """
    ExportView #left { width: 34; }
    ExportView #formats { height: auto; border: round $primary-darken-2; }
    ExportView #folder-label { padding: 1 1 0 1; }
    ExportView #preview-box { width: 1fr; border: round $primary-darken-2; }
    ExportView #export-status { height: auto; max-height: 6; padding: 0 1; }
    """

    def __init__(
        self,
        formats: Sequence[tuple[str, str]],
        render: Render,
        write: Write,
        folder: str,
        note: str | None = None,
        existing: Existing = nothing_there,
    ) -> None:
        """``formats``: (name, title) in order; every one is chosen at first. ``note``: a
        warning about the plan, shown until the files are written."""
        super().__init__()
        self.existing = existing
        self.note = note
        self.formats = list(formats)
        self.render_format = render
        self.write_files = write
        self.folder = folder
        self.written: list[str] = []

    def compose(self) -> ComposeResult:
        with Horizontal():
            with Vertical(id="left"):
                yield SelectionList[str](
                    *((title, name, True) for name, title in self.formats), id="formats"
                )
                yield Static("Folder to write to:", id="folder-label")
                # Tab into the field puts the cursor at its end: a key typed there adds to the
                # path, never replaces all of it (a "w" meant as Write).
                yield Input(self.folder, id="folder", select_on_focus=False)
            with VerticalScroll(id="preview-box"):
                yield Static("", id="preview")
        keys = Text(
            "space: choose a format · arrows: preview it · w (or enter in the folder): write"
        )
        if self.note:
            keys = Text.assemble(("Note: ", "bold yellow"), part(self.note), "\n", keys)
        yield Static(keys, id="export-status")

    def on_mount(self) -> None:
        self.show(self.formats[0][0])

    def show(self, name: str) -> None:
        try:
            shown: RenderableType = preview(self.render_format(name))
        except ExportError as error:
            shown = plain(f"{name} cannot be made for this plan: {error}", "yellow")
        self.query_one("#preview", Static).update(shown)
        self.query_one("#preview-box", VerticalScroll).scroll_home(animate=False)

    @on(SelectionList.SelectionHighlighted, "#formats")
    def highlighted(self, event: SelectionList.SelectionHighlighted[str]) -> None:
        self.show(event.selection.value)

    @on(Input.Submitted, "#folder")
    def folder_given(self) -> None:
        """Enter in the folder field writes, as w does elsewhere (w types a letter there)."""
        self.action_write()

    def status(self, text: Text) -> None:
        self.query_one("#export-status", Static).update(text)

    def action_write(self) -> None:
        chosen = self.query_one("#formats", SelectionList).selected
        folder = self.query_one("#folder", Input).value.strip()
        if not chosen:
            self.status(Text("Choose at least one format (space).", style="yellow"))
            return
        if not folder or "\0" in folder or "\n" in folder:
            self.status(Text("Give the folder to write to.", style="yellow"))
            return
        files: list[ExportFile] = []
        skipped = []
        for name in (n for n, _ in self.formats if n in chosen):
            try:
                files += self.render_format(name)
            except ExportError as error:
                skipped.append(f"{name}: {error}")
        target = Path(folder).expanduser()
        there = self.existing(target, [f.name for f in files]) if files else []
        if not there:
            self.write(target, files, skipped)
            return
        which = (
            f"all {len(files)}" if len(there) == len(files) else f"{len(there)} of the {len(files)}"
        )
        question = (
            f"{target} has {which} files already: {', '.join(there)}. "
            "Replace them with the new ones?"
        )

        def answered(replace: bool | None) -> None:
            if replace:
                self.write(target, files, skipped)
            else:
                self.status(plain(f"Nothing written: {target} keeps its files.", "yellow"))

        self.app.push_screen(ConfirmScreen(question, "replace them", "keep them"), answered)

    def write(self, folder: Path, files: list[ExportFile], skipped: list[str]) -> None:
        try:
            paths = self.write_files(folder, files) if files else []
        except OSError as error:
            self.status(plain(f"Cannot write to {folder}: {error.strerror}", "bold red"))
            return
        self.written = [str(p) for p in paths]
        where = paths[0].parent if paths else folder
        lines = plain(f"Wrote {counted(len(paths), 'file')} to {where}:\n", "bold green")
        lines.append(*part("  " + "  ".join(p.name for p in paths)))
        for line in skipped:
            lines.append(*part(f"\nnot written: {line}", "yellow"))
        self.status(lines)
        self.query_one("#formats", SelectionList).focus()  # so c continues, not types a "c"

    def action_proceed(self) -> None:
        self.answer(Exported(tuple(self.written)))
