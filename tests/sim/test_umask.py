"""Under ``umask 000`` an install still creates nothing group- or world-writable (issue 19).

Started from a shell or unit with umask 000, a runner that kept it would leave the folders and
files its steps create writable by everyone, so a local user could swap a downloaded installer
between its check and its run. The runner sets umask 022 at start, and the download folder is
made root-only (0700). The simulated install runs the real detached runner and the stand-in
tools it starts, which inherit its umask as real ones would.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tests.sim.conftest import H100


def modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.lstat().st_mode) for p in root.rglob("*")}


def test_an_install_started_under_umask_000_creates_nothing_others_can_write(sim):
    host = sim(H100)
    before = modes(host.sandbox.root)
    old = os.umask(0)
    try:
        runs = [host.cli("apply", "--yes") for _ in range(2)]
    finally:
        os.umask(old)
    assert [r.returncode for r in runs] == [10, 0], runs[-1].stdout + runs[-1].stderr

    after = modes(host.sandbox.root)
    created = {path: mode for path, mode in after.items() if path not in before}
    assert "var/cache/gpuwizard/torch-2.14.1-cu130.hashes.txt" in created, "the step wrote there"
    writable = {path: oct(mode) for path, mode in created.items() if mode & 0o022}
    assert writable == {}
    assert after["var/cache/gpuwizard"] == 0o700, "the download folder is root's alone"
    state = {path: oct(mode) for path, mode in modes(host.state_dir).items() if mode & 0o077}
    assert state == {}, "the runner's state stays private"
