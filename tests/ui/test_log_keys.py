"""The install's log pane never cuts a line: it wraps long lines at its width, between words or
after a / or - in a path (and again when the width changes), or scrolls them sideways (l),
marking where a line goes on past an edge; it follows the end or stops (f); / finds a word,
highlights it and counts the matches, n the next match. It has the focus, and shows it."""

from __future__ import annotations

import pytest
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
        assert all(len(line.rstrip()) <= width for line in pane.lines)
        assert "".join(pane.lines[1:-1]) == LONG, "the wrapped pieces are the whole line"
        assert all(piece.endswith(" ") for piece in pane.lines[1:-2]), "broken between words"
        await pilot.resize_terminal(120, 30)
        await pilot.pause(0.1)
        wider = pane.scrollable_content_region.width
        assert wider > width and width < max(len(line.rstrip()) for line in pane.lines) <= wider
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


async def test_the_log_has_the_focus_at_once_and_shows_it() -> None:
    """Arrows scroll the log without a Tab first; the focused box's border is another colour;
    Tab reaches only a box with something to scroll (the step's commands here), marked too."""
    view = InstallView(installing([]), FakeMachine(), now=lambda: NOW)  # the first step waits
    app = ViewHarness(view)
    async with app.run_test(size=(80, 18)) as pilot:  # where the step's commands overflow
        await until(pilot, lambda: view.is_mounted)
        pane = view.query_one(LogPane)
        details = view.query_one("#details-box")
        assert app.focused is pane
        unfocused = details.styles.border_top[1]
        assert pane.styles.border_top[1] != unfocused, "the focused log is marked"
        pane.add([f"line {i}" for i in range(100)])
        await pilot.pause(0.2)
        bottom = pane.scroll_offset.y
        await pilot.press("up", "up", "up")
        assert pane.scroll_offset.y == bottom - 3, "the arrows scrolled the log"
        assert details.max_scroll_y > 0, "the first step's commands overflow their box at 80x18"
        await pilot.press("tab")
        assert app.focused is details and details.styles.border_top[1] != unfocused
        assert pane.styles.border_top[1] == unfocused
        await pilot.press("tab")
        assert app.focused is pane, "the empty hint box and the view itself are passed over"


def row_text(pane: LogPane, y: int) -> str:
    return pane.render_line(y).text


async def test_a_line_cut_at_an_edge_is_marked_when_scrolling_sideways() -> None:
    app = PaneApp()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(LogPane)
        pane.add(["short", LONG])
        await pilot.pause(0.1)
        pane.toggle_wrap()
        await pilot.pause(0.1)
        width = pane.scrollable_content_region.width
        assert row_text(pane, 0).rstrip() == "short", "a line that fits is not marked"
        assert row_text(pane, 1)[: width - 1] == LONG[: width - 1]
        assert row_text(pane, 1)[width - 1] == "→", "the cut at the right edge is marked"
        pane.scroll_to(x=10, animate=False)
        await pilot.pause(0.1)
        shown = row_text(pane, 1)
        assert shown[0] == "←" and shown[1 : width - 1] == LONG[11 : 10 + width - 1]
        assert shown[width - 1] == "→"
        pane.scroll_to(x=len(LONG) - width, animate=False)
        await pilot.pause(0.1)
        assert row_text(pane, 1)[width - 1] == LONG[-1], "the line's own end is not marked"
        pane.toggle_wrap()
        assert "→" not in "".join(row_text(pane, y) for y in range(3)), "wrapped: nothing is cut"


async def test_a_search_highlights_its_matches_and_counts_them() -> None:
    view = InstallView(installing([STARTED]), FakeMachine(), now=lambda: NOW)
    app = ViewHarness(view)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: view.is_mounted)
        pane = view.query_one(LogPane)
        pane.add(
            [f"line {i}" for i in range(100)]
            + ["update-initramfs: Generating /boot/initrd"]
            + ["x"] * 30
            + ["run update-initramfs again"]
        )
        await pilot.pause(0.2)
        await pilot.press("slash", *"initramfs", "enter")
        await until(pilot, lambda: pane.found_at is not None)
        assert str(pane.border_subtitle) == "'initramfs': match 1/2 · n next"
        assert str(pane.border_title) == "log · wrapped · not following", "the title stays whole"
        row = pane.found_at - pane.scroll_offset.y
        strip = pane.render_line(row)
        marked = "".join(
            s.text
            for s in strip
            if s.style and s.style.bgcolor and s.style.bgcolor.name == "yellow"
        )
        assert marked == "initramfs"
        await pilot.press("n")
        assert str(pane.border_subtitle) == "'initramfs': match 2/2 · n next"
        assert pane.lines[pane.found_at] == "run update-initramfs again"
        await pilot.press("slash", *["ctrl+u"], *"no such word", "enter")
        await until(pilot, lambda: "not found" in str(pane.border_subtitle))
        assert str(pane.border_subtitle) == "'no such word' not found"


async def test_the_borders_fit_the_pane_at_80_columns() -> None:
    """The title whole in both modes, and a long search term shortened, not the count."""
    view = InstallView(installing([STARTED]), FakeMachine(), now=lambda: NOW)
    app = ViewHarness(view)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: view.is_mounted)
        pane = view.query_one(LogPane)
        room = pane.size.width  # the border's width less its corners and the title's spaces
        pane.add(["a needle-in-a-haystack-of-words line", "another needle-in-a-haystack-of-words"])
        for _ in range(2):
            assert len(str(pane.border_title)) <= room, pane.border_title
            pane.toggle_wrap()
            pane.toggle_follow()
        await pilot.pause(0.1)
        pane.search("needle-in-a-haystack-of-words")
        note = str(pane.border_subtitle)
        assert note == "'needle-in-a-hay…': match 1/2 · n next" and len(note) <= room


SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


def searched_log():  # type: ignore[no-untyped-def]
    """The install view's log after `/initramfs`: the matches highlighted, the count in the
    border, the log focused (its border lit)."""

    async def search(pilot) -> None:  # type: ignore[no-untyped-def]
        view = pilot.app.shell.view
        await until(pilot, lambda: view.is_mounted)
        pane = view.query_one(LogPane)
        pane.add([f"Setting up package-{i} (1.0-{i}) ..." for i in range(40)])
        pane.add(["update-initramfs: Generating /boot/initrd.img-6.1.0-57-cloud-amd64"])
        pane.add([f"Processing triggers for man-db ({i}) ..." for i in range(3)])
        pane.add(["run update-initramfs -u again after changing /etc/modprobe.d"])
        await pilot.pause(0.2)
        await pilot.press("slash", *"initramfs", "enter")
        await until(pilot, lambda: pane.found_at is not None)
        await pilot.pause(0.1)

    return search


def sideways_log():  # type: ignore[no-untyped-def]
    async def sideways(pilot) -> None:  # type: ignore[no-untyped-def]
        view = pilot.app.shell.view
        await until(pilot, lambda: view.is_mounted)
        pane = view.query_one(LogPane)
        pane.add(["short line", LONG, "another short line", LONG.replace("word", "item")])
        await pilot.pause(0.2)
        await pilot.press("l")
        pane.scroll_to(x=20, animate=False)
        await pilot.pause(0.2)

    return sideways


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", ["searched", "sideways"])
def test_the_log_looks_right(snap_compare, name: str, size) -> None:  # type: ignore[no-untyped-def]
    view = InstallView(installing([]), FakeMachine(), now=lambda: NOW)
    before = {"searched": searched_log, "sideways": sideways_log}[name]()
    assert snap_compare(ViewHarness(view), terminal_size=size, run_before=before)


async def test_a_long_path_in_the_log_breaks_after_a_slash_or_a_dash() -> None:
    app = PaneApp()
    async with app.run_test(size=(60, 24)) as pilot:
        pane = app.query_one(LogPane)
        path = "/var/lib/gpuwizard/sim/h100x8-ubuntu2204-fresh/state/logs/run-20261203-101500/install-nvidia-driver.log"
        pane.add([f"Consult {path} for more information."])
        await pilot.pause(0.1)
        width = pane.scrollable_content_region.width
        rows = list(pane.lines)
        assert "".join(rows) == f"Consult {path} for more information."
        assert len(rows) > 2 and all(len(row.rstrip()) <= width for row in rows)
        assert all(row.endswith(("/", "-", " ")) for row in rows[:-1]), rows
