"""What the simulated machine prints and the wizard says of it is true: apt names the machine's
own archive and release (os-release's codename), never another release's ("jammy" on Ubuntu
24.04 or Debian); the doctor names GPUDirect RDMA only where RDMA devices exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwizard.doctor.diagnose import diagnose
from gpuwizard.machine.detect.recording import recorded_host
from gpuwizard.sim import shim
from tests.conftest import facts_of, profile_dir

CODENAMES = {
    "a100x4-ubuntu2004-fresh": ("http://archive.ubuntu.com/ubuntu", "focal"),
    "h100x8-ubuntu2204-fresh": ("http://archive.ubuntu.com/ubuntu", "jammy"),
    "rtx5090-ubuntu2404-secureboot": ("http://archive.ubuntu.com/ubuntu", "noble"),
    "t4-debian12-fresh": ("http://deb.debian.org/debian", "bookworm"),
    "t4-debian12-secureboot": ("http://deb.debian.org/debian", "bookworm"),
}


@pytest.mark.parametrize("profile", list(CODENAMES))
def test_apt_get_update_names_the_machines_own_archive_and_release(sim, profile):
    host = sim(profile)
    host.facts()  # the sandbox is made from the recorded host on first use
    _, lines, code = shim.apt_get(host.sandbox, host.state(), ["-q", "update"])
    archive, codename = CODENAMES[profile]
    assert code == 0 and lines[0] == f"Hit:1 {archive} {codename} InRelease"


PROFILES = sorted(
    p.name for p in (Path(__file__).parents[2] / "wizard/sim/recorded-hosts").iterdir()
)


@pytest.mark.parametrize("profile", PROFILES)
def test_gpudirect_rdma_is_named_only_where_rdma_devices_exist(profile):
    """The doctor speaks of GPUDirect RDMA (nvidia_peermem) only on a host whose sysfs lists
    RDMA devices (/sys/class/infiniband): never on an Ethernet-only machine."""
    host = recorded_host(profile_dir(profile))
    report = diagnose(host, Path("/nonexistent/gpuwizard")).report
    said = " ".join(
        f"{f.title} {f.explanation} {f.fix} {' '.join(f.evidence)}" for f in report.findings
    )
    if not host.is_dir("/sys/class/infiniband"):
        assert "RDMA" not in said and "peermem" not in said, profile


@pytest.mark.parametrize("profile", PROFILES)
def test_the_codename_shown_is_the_one_os_release_gives(profile):
    facts = facts_of(profile)
    text = (profile_dir(profile) / "root/etc/os-release").read_text()
    values = dict(
        line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#")
    )
    expected = (values.get("UBUNTU_CODENAME") or values.get("VERSION_CODENAME") or "").strip('"')
    assert (facts.os.version_codename if facts.os else None) == (expected or None)
