"""The Export view's folder and files: Tab into the folder field keeps the path (a key typed
there adds to it), and files already in the folder are replaced only after a yes."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Static

from gpuwizard.export.formats import ExportFile
from gpuwizard.frontends.stageviews import files_in
from gpuwizard.runner.files import write_files
from gpuwizard.screens.export import ExportView
from gpuwizard.screens.modals import ConfirmScreen
from tests.ui.pilots import ViewHarness, until


def render(name: str) -> list[ExportFile]:
    return [ExportFile(f"{name}.txt", f"new {name}\n", 0o644, "text")]


def view(folder: Path) -> ExportView:
    def write(where: Path, files: list[ExportFile]) -> list[Path]:
        return write_files(where, [(f.name, f.content, f.mode) for f in files])

    return ExportView(
        [("script", "Deploy script"), ("answers", "Answers")],
        render,
        write,
        str(folder),
        existing=files_in,
    )


def status(app: ViewHarness) -> str:
    return str(app.shell.view.query_one("#export-status", Static).render())  # type: ignore[union-attr]


async def test_tab_into_the_folder_keeps_the_path(tmp_path: Path) -> None:
    app = ViewHarness(view(tmp_path / "out"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab")
        folder = app.shell.view.query_one("#folder", Input)  # type: ignore[union-attr]
        assert app.focused is folder
        await pilot.press("w")
        assert folder.value == f"{tmp_path / 'out'}w", "the w went after the path, not over it"


async def test_files_in_the_folder_are_replaced_only_after_a_yes(tmp_path: Path) -> None:
    (tmp_path / "script.txt").write_text("the person's own script\n")
    app = ViewHarness(view(tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        asked = str(app.screen.query(Static).first().content)
        assert (
            asked
            == f"{tmp_path} has 1 of the 2 files already: script.txt. Replace them with the new ones?"
        )
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert (tmp_path / "script.txt").read_text() == "the person's own script\n"
        assert not (tmp_path / "answers.txt").exists(), "nothing is written without the yes"
        assert "Nothing written" in status(app)
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: "Wrote 2 files" in status(app))
        assert (tmp_path / "script.txt").read_text() == "new script\n"


async def test_a_new_folder_is_written_without_a_question(tmp_path: Path) -> None:
    app = ViewHarness(view(tmp_path / "new"))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("w")
        await until(pilot, lambda: "Wrote 2 files" in status(app))
        assert not isinstance(app.screen, ConfirmScreen)


def test_the_replace_question_looks_right(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    question = ConfirmScreen(
        "/root/gpuwizard-export has 3 of the 6 files already: deploy.sh, Dockerfile, "
        "answers.yaml. Replace them with the new ones?",
        "replace them",
        "keep them",
    )
    assert snap_compare(ViewHarness(question), terminal_size=(80, 24))
