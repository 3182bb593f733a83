"""While the log pane follows, its newest line is always in view: after a reattach (the tail of
a long log read at once), a resize of the terminal, and a pane that shrinks because something
appears above it (the dpkg-lock hint). Scrolling up stops following, and says so."""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.pilot import Pilot
from textual.widgets import Static

from gpuwizard.runner import events as ev
from gpuwizard.screens.install import InstallView
from gpuwizard.screens.widgets.log_pane import LogPane
from tests.ui.pilots import FakeMachine, ViewHarness, until
from tests.ui.test_snapshots import NOW, STARTED, installing

HISTORY = [
    f"Get:{n} http://deb.debian.org/debian bookworm/main amd64 package-{n} 1.0-{n} [{n} kB]"
    for n in range(1, 121)
]
LOCKED = "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4750 (unattended-upgr)"


def last_shown(pane: LogPane) -> str:
    """Which row of the log the pane's bottom row shows now, and what it holds."""
    row = pane.scroll_offset.y + pane.scrollable_content_region.height - 1
    text = pane.lines[row] if 0 <= row < len(pane.lines) else ""
    return f"row {row + 1} of {len(pane.lines)}: {text!r}"


def ends_with(pane: LogPane, line: str) -> bool:
    """``line`` is the newest, and the pane's bottom row is its last row (wrapped or not)."""
    bottom = pane.scroll_offset.y + pane.scrollable_content_region.height - 1
    return (
        pane.scrollable_content_region.height > 0
        and pane.source[-1] == line
        and bottom == len(pane.lines) - 1
    )


def reattach(log: Path, *extra: ev.RunEvent) -> tuple[InstallView, ViewHarness]:
    """A terminal comes back to a step whose log already holds 120 lines (a long one among them)."""
    log.write_text("\n".join(HISTORY) + "\n")
    events = [
        STARTED,
        ev.StepSkipped("wait-cloud-init", "cloud-init is done"),
        ev.StepStarted("upgrade-kernel", "Apply the pending kernel update", 1, str(log)),
        ev.ActionStarted("upgrade-kernel", 0, "apt-get -q update"),
        *extra,
    ]
    view = InstallView(installing(events), FakeMachine(), now=lambda: NOW)
    return view, ViewHarness(view)


async def settle(pilot: Pilot[None], pane: LogPane, line: str) -> None:
    await until(pilot, lambda: bool(pane.source) and pane.source[-1] == line, timeout_s=10)
    await pilot.pause(0.1)


async def shows_end(pilot: Pilot[None], pane: LogPane, line: str, when: str) -> None:
    """The end comes into view once the layout has settled (a few frames), or never."""
    try:
        await until(pilot, lambda: ends_with(pane, line), timeout_s=3)
    except AssertionError:
        raise AssertionError(f"{when}, the pane's bottom shows {last_shown(pane)}") from None


async def test_a_reattach_shows_the_end_of_the_log_and_keeps_following_it(tmp_path: Path) -> None:
    view, app = reattach(tmp_path / "upgrade-kernel.log")
    async with app.run_test(size=(80, 24)) as pilot:
        pane = view.query_one(LogPane)
        await settle(pilot, pane, HISTORY[-1])
        assert pane.auto_scroll and "following" in str(pane.border_title)
        await shows_end(pilot, pane, HISTORY[-1], "after the reattach")
        with (tmp_path / "upgrade-kernel.log").open("a") as log:
            log.write("Unpacking nvidia-open (580.178.04-1) ...\n")
        await settle(pilot, pane, "Unpacking nvidia-open (580.178.04-1) ...")
        await shows_end(pilot, pane, "Unpacking nvidia-open (580.178.04-1) ...", "a line later")


async def test_a_resized_terminal_keeps_the_end_in_view(tmp_path: Path) -> None:
    view, app = reattach(tmp_path / "upgrade-kernel.log")
    async with app.run_test(size=(120, 40)) as pilot:
        pane = view.query_one(LogPane)
        await settle(pilot, pane, HISTORY[-1])
        for size in ((120, 30), (80, 24), (100, 24), (120, 40)):  # taller, narrower, wider
            await pilot.resize_terminal(*size)
            await shows_end(pilot, pane, HISTORY[-1], f"at {size}")


async def test_a_pane_shrunk_by_the_dpkg_lock_hint_keeps_the_end_in_view(tmp_path: Path) -> None:
    locked = ev.LogLines("upgrade-kernel", (LOCKED,))
    view, app = reattach(tmp_path / "upgrade-kernel.log", locked)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = view.query_one(LogPane)
        await settle(pilot, pane, HISTORY[-1])
        assert "dpkg" in str(view.query_one("#hint").render()), "the hint is on show"
        await shows_end(pilot, pane, HISTORY[-1], "under the hint")


class Shrinking(App[None]):
    """A pane under a box that grows, as the install view's hint does."""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("", id="above")
            yield LogPane()


async def test_a_pane_that_shrinks_to_three_rows_and_grows_again_shows_the_end() -> None:
    app = Shrinking()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(LogPane)
        pane.add(HISTORY)
        await settle(pilot, pane, HISTORY[-1])
        above = app.query_one("#above", Static)
        for rows in (19, 0, 12):
            above.update("\n".join(["hint"] * rows))
            await pilot.pause(0.1)
            await shows_end(pilot, pane, HISTORY[-1], f"under {rows} rows")
        pane.add(["the newest line"])
        await settle(pilot, pane, "the newest line")
        await shows_end(pilot, pane, "the newest line", "a line later")


async def test_scrolling_up_stops_following_and_end_follows_again() -> None:
    app = Shrinking()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(LogPane)
        pane.focus()
        pane.add(HISTORY)
        await settle(pilot, pane, HISTORY[-1])
        await pilot.press("up", "up")
        assert not pane.auto_scroll and "not following" in str(pane.border_title)
        where = pane.scroll_offset.y
        pane.add(["a line while reading"])
        await settle(pilot, pane, "a line while reading")
        assert pane.scroll_offset.y == where, "what the person reads stays put"
        await pilot.press("end")
        assert pane.auto_scroll
        await shows_end(pilot, pane, "a line while reading", "after End")


async def test_up_on_a_log_that_fits_keeps_following() -> None:
    """Nothing to scroll to: the key moves nothing, so the pane follows what comes next."""
    app = Shrinking()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(LogPane)
        pane.focus()
        pane.add(["one line"])
        await settle(pilot, pane, "one line")
        await pilot.press("up", "pageup", "home")
        assert pane.auto_scroll and "not following" not in str(pane.border_title)
        pane.add(HISTORY)
        await settle(pilot, pane, HISTORY[-1])
        await shows_end(pilot, pane, HISTORY[-1], "after a long output")
