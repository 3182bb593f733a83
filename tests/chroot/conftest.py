"""Fixtures of the chroot tiers: the cached Debian root, machines made from it, and the report.

The quick tier (``tests/chroot/test_*.py``) runs with every ``pytest``; the heavy tier
(``tests/chroot/heavy.py``, never collected by default) runs as its own command:
``python -m pytest tests/chroot/heavy.py``. Both need root (mmdebstrap, chroot, mounts) and the
Debian archive; without them they skip, except under CI (GPUWIZARD_CI=1), where they fail.
Each test's machine lives in its own temporary folder and is deleted afterwards, after checking
that nothing is left mounted under it. At the end the report lists each phase's wall-clock time
and everything that could not be checked here (with the reason), which is never counted as passed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.chroot import roots
from tests.chroot.machine import ChrootMachine, create_machine, remove_machine
from tests.conftest import profile_dir

TIMINGS: list[tuple[str, float]] = []
FIGURES: list[str] = []
"""Figures a test worked out from the times (a ratio), printed after them."""
NOT_CHECKED: dict[str, str] = {}
"""What could not be checked here -> why (a third-party repository, no GPU)."""
T4 = "t4-debian12-fresh"


@contextmanager
def timed(label: str) -> Iterator[None]:
    started = time.monotonic()
    try:
        yield
    finally:
        TIMINGS.append((label, time.monotonic() - started))


def not_checked(what: str, why: str) -> None:
    NOT_CHECKED[what] = why


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TIMINGS:
        terminalreporter.section("chroot tier: wall-clock times")
        for label, seconds in TIMINGS:
            terminalreporter.write_line(f"{seconds:8.1f} s  {label}")
    if FIGURES:
        terminalreporter.section("chroot tier: figures")
        for line in FIGURES:
            terminalreporter.write_line(line)
    if NOT_CHECKED:
        terminalreporter.section("chroot tier: NOT CHECKED (not counted as passed)")
        for what, why in sorted(NOT_CHECKED.items()):
            terminalreporter.write_line(f"not checked: {what}: {why}")


def unavailable(why: str) -> None:
    if os.environ.get("GPUWIZARD_CI"):
        pytest.fail(f"the chroot tier cannot run here: {why}")
    pytest.skip(f"the chroot tier cannot run here: {why}")


@pytest.fixture(scope="session")
def bookworm() -> Path:
    """Today's cached Debian 12 cloud root (built on the first use of the day)."""
    if os.geteuid() != 0:
        unavailable("it needs root (mmdebstrap, chroot, mounts)")
    try:
        with timed("Debian 12 root: cached tarball ready (built when missing)"):
            archive = roots.tarball("bookworm")
    except roots.RootUnavailable as error:
        unavailable(str(error))
    for suite, seconds in roots.BUILD_TIMES.items():
        TIMINGS.append((f"  of which mmdebstrap {suite}", seconds))
    return archive


MachineFactory = Callable[..., ChrootMachine]


@pytest.fixture(scope="module")
def machines(bookworm: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MachineFactory]:
    """``machines(name, profile=T4, kernel=None)``: a fresh machine on today's Debian 12 root."""
    made: list[ChrootMachine] = []

    def make(name: str, profile: str = T4, kernel: str | None = None) -> ChrootMachine:
        folder = tmp_path_factory.mktemp(f"chroot-{name}")
        with timed(f"{name}: root unpacked and prepared"):
            machine = create_machine(folder / "m", bookworm, profile_dir(profile), kernel=kernel)
        made.append(machine)
        return machine

    yield make
    for machine in made:
        remove_machine(machine)
