"""This machine as gpuwizard's real host: the installed command, no simulation, read-only.

Every developer's machine and every CI machine is a real host for gpuwizard (a real kernel,
/sys, dpkg), usually without an NVIDIA GPU. These tests run the real code paths there. They
must never change the machine: ``apply`` runs only with ``--dry-run``; the runner runs only over
an empty plan in a temporary state folder; a reboot is exercised up to its command. A guard
checks that the places gpuwizard writes to on a real host are as they were.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuwizard.core import paths

GPUWIZARD = Path(sys.executable).parent / "gpuwizard"
# What a setup would write on this machine; none of it may appear or change here.
WATCHED = (
    paths.STATE_DIR,
    paths.PREFIX,
    paths.DOWNLOADS_DIR,
    paths.LOGIN_BANNER,
    paths.APT_SOURCES_DIR,
    "/etc/modprobe.d",
    *paths.MANAGED_FILES,
)


def fingerprint(path: str) -> tuple[object, ...]:
    """What a path is now: missing, or its kind, size, mtime and (for a folder) its names."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return ("missing",)
    names = tuple(sorted(p.name for p in Path(path).iterdir())) if Path(path).is_dir() else ()
    return (info.st_mode, info.st_size, info.st_mtime_ns, names)


@pytest.fixture(scope="session", autouse=True)
def host_left_unchanged() -> Iterator[None]:
    before = {path: fingerprint(path) for path in WATCHED}
    yield
    after = {path: fingerprint(path) for path in WATCHED}
    changed = [path for path in WATCHED if before[path] != after[path]]
    assert not changed, f"the real-host tests changed this machine: {changed}"


def gpuwizard(
    home: Path,
    *args: str,
    timeout_s: float = 60,
    as_uid: int | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """The installed ``gpuwizard ARGS`` as a person runs it, with a private state folder;
    ``as_uid`` runs it as that (unprivileged) user, as someone who forgot sudo does."""
    given = env or {}
    env = {**os.environ, "XDG_STATE_HOME": str(home / "state"), "HOME": str(home), **given}
    env.pop("GPUWIZARD_FAILPOINTS", None)
    if as_uid is not None:  # another user cannot write coverage's data files here
        env = {k: v for k, v in env.items() if not k.startswith("COVERAGE_")}
    user = (
        ()
        if as_uid is None
        else ("setpriv", f"--reuid={as_uid}", f"--regid={as_uid}", "--clear-groups")
    )
    done = subprocess.run(
        [*user, str(GPUWIZARD), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
        timeout=timeout_s,
        check=False,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


def one_line(stderr: str) -> str:
    """The one gpuwizard error line of a refusal (other lines may offer what to do next)."""
    errors = [line for line in stderr.splitlines() if line.startswith("gpuwizard: ")]
    assert len(errors) == 1, stderr
    return errors[0]


@pytest.fixture(scope="session")
def this_host(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """``gpuwizard detect --json`` of this machine: what the other tests should expect."""
    done = gpuwizard(tmp_path_factory.mktemp("detect"), "detect", "--json")
    assert done.returncode == 0, done.stderr
    facts: dict[str, object] = json.loads(done.stdout)["facts"]
    return facts


@pytest.fixture(scope="session")
def has_gpu(this_host: dict[str, object]) -> bool:
    hardware = this_host["hardware"]
    assert isinstance(hardware, dict)
    return bool(hardware["gpus"])


NOBODY = 65534


@contextlib.contextmanager
def unprivileged() -> Iterator[None]:
    """Run the block as nobody (effective uid only, so root comes back after it)."""
    if os.geteuid() != 0:
        yield  # already unprivileged
        return
    os.setegid(NOBODY)
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)
