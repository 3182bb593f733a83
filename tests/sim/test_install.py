"""Full installs with ``gpuwizard apply`` on fresh simulated hosts: through every reboot to a
verified PyTorch, and then the idempotence rule: a second apply changes nothing.

These run the console command in a subprocess, exactly as a person would after each reboot; the
runner is the real detached one and the fake reboot really kills it.
"""

from __future__ import annotations

import json

import pytest

from tests.sim.conftest import A100, H100, planned_commands


@pytest.mark.parametrize(
    ("profile", "reboots"),
    [
        pytest.param(A100, 2, id="4x A100, Ubuntu 20.04: kernel update reboot, then driver reboot"),
        pytest.param(H100, 1, id="8x H100, Ubuntu 22.04: one driver reboot"),
    ],
)
def test_apply_installs_a_fresh_host_through_its_reboots_and_a_second_apply_changes_nothing(
    sim, profile, reboots
):
    host = sim(profile)
    runs = [host.cli("apply", "--yes") for _ in range(reboots + 1)]

    assert [run.returncode for run in runs] == [10] * reboots + [0], (
        runs[-1].stdout + runs[-1].stderr
    )
    assert "every step is done" in runs[-1].stdout
    journal = host.journal()
    assert journal.finished
    assert set(host.step_states().values()) <= {"done", "skipped"}
    assert host.state().reboots == reboots
    report = json.loads(host.path("/var/lib/gpuwizard/verify.json").read_text())
    assert report["ok"] and report["boot_id"] == host.boot_id()
    assert host.commands() == planned_commands(journal.plan), (
        "each planned command ran exactly once"
    )

    calls_before = host.sandbox.calls.read_text()
    again = host.cli("apply", "--yes")

    assert again.returncode == 0, again.stdout + again.stderr
    assert "Nothing to do: every step is already done." in again.stdout
    assert host.sandbox.calls.read_text() == calls_before, "the second apply ran a command"
