"""Between the driver's install and the reboot it waits for, the doctor says a reboot is pending
(the module is installed but not loaded), not that the driver is missing or broken."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gpuwizard.runner.layout import EXIT_REBOOT
from tests.doctor.test_sim import doctor, finding
from tests.sim.conftest import H100, SimHost

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def test_the_doctor_says_reboot_pending_between_the_install_and_the_reboot(
    sim: Callable[[str], SimHost],
) -> None:
    host = sim(H100)
    host.plan()
    assert host.run() == EXIT_REBOOT
    result = doctor(host)
    driver = finding(result, "driver")
    assert driver.title == "Reboot pending: the module is installed but not loaded", driver
    assert driver.severity == "warn" and "reboot" in driver.fix.lower()
    assert all(f.severity != "problem" for f in result.report.findings), result.report.findings
