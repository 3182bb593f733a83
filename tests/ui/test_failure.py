"""A failed step says which command failed, how it ended, its last lines, and the doctor's hint;
a full disk says so and names the file system (from df, through the run control)."""

from __future__ import annotations

from gpuwizard.screens.install import InstallView
from tests.ui.pilots import FakeMachine, ViewHarness
from tests.ui.test_snapshots import DISK_FULL_RUN, FAILED_RUN, KERNEL_LOG, NOW, STARTED, installing


async def failure_shown(events: list) -> str:  # type: ignore[type-arg]
    view = InstallView(installing([STARTED, *events]), FakeMachine(), now=lambda: NOW)
    app = ViewHarness(view)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert view.mode == "failed"
        return str(view.query_one("#hint").render())


async def test_a_failure_shows_command_exit_status_last_lines_and_the_doctors_hint() -> None:
    shown = await failure_shown(FAILED_RUN)
    assert "Apply the pending kernel update: exited 100" in shown
    assert "$ apt-get -q -y full-upgrade" in shown
    assert "| E: Could not get lock /var/lib/dpkg/lock-frontend" in shown
    assert "holds the dpkg lock" in shown and "never delete the lock files" in shown
    assert KERNEL_LOG in shown


async def test_a_full_disk_says_so_and_names_the_file_system_that_holds_the_path() -> None:
    shown = await failure_shown(DISK_FULL_RUN)
    assert "The disk is full" in shown and "/var/cache/apt/archives/" in shown
    assert "It is /var, with 52 MiB free now." in shown, shown
