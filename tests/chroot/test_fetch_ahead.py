"""Fetching ahead in a real Debian 12 root, against the real archive (wizard/runner/aptfetch.py,
wizard/runner/prefetch.py).

apt names the files and their SHA-256 from its signed lists; each is checked as it lands in the
root's apt cache, and apt then installs from there without a download. (apt does not check a
cached file of the right size again: measured here, an altered one reached dpkg. What lands there
must be checked on the way in.) The runner's own fetching process runs beside a real apt-get
install (no lock between them).
"""

from __future__ import annotations

import json
from unittest.mock import ANY

import pytest

from gpuwizard.core.ops import AptInstall
from gpuwizard.core.plan import APT_ENV
from gpuwizard.core.request import SetupRequest
from gpuwizard.runner.control import request_skip
from gpuwizard.runner.prefetch import STATE
from tests.chroot.conftest import MachineFactory, timed
from tests.chroot.drive import plan_on, run_runner, start_run
from tests.chroot.machine import ChrootMachine
from tests.chroot.shim import apt_fetch
from tests.chroot.test_defects import only

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ARCHIVES = "/var/cache/apt/archives"
SMALL = ("cowsay", "libtext-charwidth-perl")
"""Two small packages of Debian 12's main, one depending on the other."""


@pytest.fixture(scope="module")
def rooted(machines: MachineFactory) -> ChrootMachine:
    machine = machines("ahead")
    machine.run(["apt-get", "-q", "update"], env=APT_ENV, check=True)
    return machine


def cached(machine: ChrootMachine) -> set[str]:
    return {p.name.split("_", 1)[0] for p in machine.path(ARCHIVES).glob("*.deb")}


def test_packages_fetched_ahead_install_without_a_download(rooted):
    assert apt_fetch(rooted, ["--no-install-recommends", SMALL[0]]) == 0
    assert set(SMALL) <= cached(rooted)

    done = rooted.run(
        ["apt-get", "-q", "-y", "--no-download", "--no-install-recommends", "install", SMALL[0]],
        env=APT_ENV,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_package_apt_cannot_name_fails_the_fetch_alone(rooted, capsys):
    assert apt_fetch(rooted, ["no-such-package-anywhere"]) == 1
    assert "Unable to locate package no-such-package-anywhere" in capsys.readouterr().err


def test_the_runner_fetches_the_driver_s_packages_while_the_headers_install(machines):
    """The driver step itself is skipped (its DKMS build is the heavy tier's): its packages are
    in the cache by the time its turn comes."""
    machine = machines("ahead-runner")
    planned = plan_on(machine, SetupRequest(variant="cu126", driver_branch="535"))
    ids = ("enable-debian-nonfree", "install-headers", "install-nvidia-driver")
    assert [s.id for s in planned.plan.steps if s.id in ids and s.actions] == list(ids)
    start_run(machine, only(planned, *ids))
    request_skip(machine.state_dir, "install-nvidia-driver")

    with timed("ahead: the runner, the headers installed beside the driver's packages"):
        assert run_runner(machine, ahead=True) == 0

    record = json.loads((machine.state_dir / STATE).read_text())["steps"]
    assert record == {"install-nvidia-driver": ["done", ANY]}, record
    log = next(machine.state_dir.glob("logs/*/fetch-ahead.log")).read_text()
    assert "SHA-256 checked against apt's index" in log
    actions = planned.plan.step("install-nvidia-driver").actions
    driver = next(a for a in actions if isinstance(a, AptInstall))
    assert set(driver.packages) <= cached(machine)
