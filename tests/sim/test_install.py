"""Full installs with ``gpuwizard apply`` on fresh simulated hosts: through every reboot to a
verified PyTorch, and then the idempotence rule: a second apply changes nothing.

These run the console command in a subprocess, exactly as a person would after each reboot; the
runner is the real detached one and the fake reboot really kills it.
"""

from __future__ import annotations

import json

import pytest

from gpuwizard.runner import events as ev
from tests.sim.conftest import A100, H100, T4_DEBIAN, planned_commands


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


def test_a_cloud_kernel_without_nouveau_gets_its_driver_loaded_without_a_reboot(sim):
    """Issue 15 §4: nouveau absent, the module built for the running kernel, no Secure Boot key
    waiting: modprobe and NVML instead of a reboot; the reboot step skips itself."""
    host = sim(T4_DEBIAN)
    run = host.cli("apply", "--yes")

    assert run.returncode == 0, run.stdout + run.stderr
    states = host.step_states()
    assert states["load-nvidia-driver"] == "done" and states["reboot"] == "skipped"
    assert host.state().reboots == 0
    assert ("modprobe", "nvidia") in host.commands() and ("reboot",) not in host.commands()
    assert json.loads(host.path("/var/lib/gpuwizard/verify.json").read_text())["ok"]


def test_when_loading_fails_the_reboot_loads_the_driver(sim):
    host = sim(T4_DEBIAN)
    host.scenario(rules=[{"tool": "modprobe", "match": "nvidia", "exit": 1,
                          "output": "modprobe: ERROR: could not insert 'nvidia': Operation not permitted"}])  # fmt: skip
    runs = [host.cli("apply", "--yes") for _ in range(2)]

    assert [r.returncode for r in runs] == [10, 0], runs[-1].stdout + runs[-1].stderr
    events = host.events_of(ev.StepFinished)
    load = next(e for e in events if e.step == "load-nvidia-driver")
    assert (
        load.ok
        and "could not be loaded now" in load.reason
        and "the reboot step loads it" in load.reason
    )
    assert host.state().reboots == 1 and host.step_states()["reboot"] == "done"
