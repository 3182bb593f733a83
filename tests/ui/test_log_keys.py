"""The install's log pane never cuts a line: it wraps long lines at its width (and again when the
width changes) or scrolls them sideways (l); it follows the end or stops (f); / finds a word and
n the next match."""

from __future__ import annotations

from textual.app import App, ComposeResult

from gpuwizard.screens.install import InstallView
from gpuwizard.screens.modals import SearchScreen
from gpuwizard.screens.widgets.log_pane import LogPane
from tests.ui.pilots import FakeMachine, ViewHarness, until
from tests.ui.test_snapshots import NOW, STARTED, installing

LONG = "E: " + " ".join(f"word{i:03d}" for i in range(60))  # 481 characters, no cut allowed


class PaneApp(App[None]):
    def compose(self) -> ComposeResult:
        yield LogPane()


async def test_a_long_line_wraps_whole_and_rewraps_when_the_width_changes() -> None:
    app = PaneApp()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(LogPane)
        pane.add(["short", LONG, "after"])
        await pilot.pause(0.1)
        width = pane.scrollable_content_region.width
        assert all(len(line) <= width for line in pane.lines)
        assert "".join(pane.lines[1:-1]) == LONG, "the wrapped pieces are the whole line"
        await pilot.resize_terminal(120, 30)
        await pilot.pause(0.1)
        wider = pane.scrollable_content_region.width
        assert wider > width and max(len(line) for line in pane.lines) == wider
        assert "".join(pane.lines[1:-1]) == LONG


async def test_l_toggles_sideways_scrolling_and_back() -> None:
    app = PaneApp()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(LogPane)
        pane.add([LONG])
        await pilot.pause(0.1)
        pane.toggle_wrap()
        assert list(pane.lines) == [LONG] and "scroll" in str(pane.border_title)
        await pilot.pause(0.1)
        assert pane.virtual_size.width >= len(LONG) > pane.size.width, (
            "the line scrolls sideways, whole"
        )
        pane.toggle_wrap()
        assert "".join(pane.lines) == LONG and "wrapped" in str(pane.border_title)


async def test_keys_toggle_follow_and_find_words_in_the_install_log() -> None:
    view = InstallView(installing([STARTED]), FakeMachine(), now=lambda: NOW)
    app = ViewHarness(view)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        pane = view.query_one(LogPane)
        pane.add([f"line {i}" for i in range(200)] + ["needle one"] + ["x"] * 50 + ["needle two"])
        await pilot.pause(0.2)
        assert pane.auto_scroll and "following" in str(pane.border_title)
        await pilot.press("f")
        assert not pane.auto_scroll and "not following" in str(pane.border_title)
        await pilot.press("f")
        assert pane.auto_scroll
        await pilot.press("slash")
        await until(pilot, lambda: isinstance(app.screen, SearchScreen))
        await pilot.press(*"needle", "enter")
        await until(pilot, lambda: pane.found_at is not None)
        assert pane.lines[pane.found_at] == "needle one" and not pane.auto_scroll
        assert pane.scroll_y <= pane.found_at <= pane.scroll_y + pane.size.height
        await pilot.press("n")
        assert pane.lines[pane.found_at] == "needle two"
        await pilot.press("n")  # round to the first again
        assert pane.lines[pane.found_at] == "needle one"
