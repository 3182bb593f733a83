"""What the simulated machine prints is true of it: apt names the machine's own archive and
release (os-release's codename), never another release's ("jammy" on Ubuntu 24.04 or Debian)."""

from __future__ import annotations

import pytest

from gpuwizard.sim import shim

CODENAMES = {
    "a100x4-ubuntu2004-fresh": ("http://archive.ubuntu.com/ubuntu", "focal"),
    "h100x8-ubuntu2204-fresh": ("http://archive.ubuntu.com/ubuntu", "jammy"),
    "rtx5090-ubuntu2404-secureboot": ("http://archive.ubuntu.com/ubuntu", "noble"),
    "t4-debian12-fresh": ("http://deb.debian.org/debian", "bookworm"),
}


@pytest.mark.parametrize("profile", list(CODENAMES))
def test_apt_get_update_names_the_machines_own_archive_and_release(sim, profile):
    host = sim(profile)
    host.facts()  # the sandbox is made from the recorded host on first use
    _, lines, code = shim.apt_get(host.sandbox, host.state(), ["-q", "update"])
    archive, codename = CODENAMES[profile]
    assert code == 0 and lines[0] == f"Hit:1 {archive} {codename} InRelease"
