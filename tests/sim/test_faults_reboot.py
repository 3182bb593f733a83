"""Reboot and resume against the simulated host (reliability.md §9, T01-T08, T18, T21-T23).

A reboot counts as happened only when a well-formed boot_id differs from the one recorded when
it was requested; the steps that waited for it are done only when they verify on the new boot;
a reboot that does not help is not offered forever. Most cases run the runner in-process and
reboot the sandbox by hand; T02, T05 and T18 use the detached runner, which the fake reboot kills.
"""

from __future__ import annotations

import uuid

import pytest

from gpuwizard.core.facts import NvmlOk, NvmlUnavailable
from gpuwizard.core.request import SetupRequest
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.table import load_table
from gpuwizard.recommend.target import target_from_facts
from gpuwizard.runner import events as ev
from gpuwizard.runner.layout import EXIT_DONE, EXIT_FAILED, EXIT_REBOOT, EXIT_STOPPED
from gpuwizard.steps.blacklist_nouveau import BLACKLIST
from tests.sim.conftest import H100, SIGKILLED, T4_DEBIAN, planned_commands

NOUVEAU_CONF = "/etc/modprobe.d/gpuwizard-blacklist-nouveau.conf"
UPDATE_INITRAMFS = ("update-initramfs", "-u", "-k", "all")
MOK_PASSWORD = "Mok-pass-4242"


def test_t01_a_real_reboot_is_seen_by_its_new_boot_id_and_only_then_are_the_waiting_steps_done(sim):
    host = sim(H100)
    host.plan()
    boot_before = host.boot_id()

    assert host.run() == EXIT_REBOOT
    assert host.step_states()["blacklist-nouveau"] == "awaiting_reboot"
    assert host.step_states()["reboot"] == "awaiting_reboot"
    assert host.journal().reboot is not None
    assert host.journal().reboot.boot_id_before == boot_before
    seen = len(host.events())

    host.reboot()
    assert host.run() == EXIT_DONE

    resumed = host.events()[seen:]
    detected = [e for e in resumed if isinstance(e, ev.RebootDetected)]
    assert detected == [ev.RebootDetected(boot_before, host.boot_id())]
    finished = [e.step for e in resumed if isinstance(e, ev.StepFinished) and e.ok]
    assert finished[:2] == ["blacklist-nouveau", "reboot"], (
        "verified on the new boot, right after it"
    )
    assert resumed.index(detected[0]) < next(
        i for i, e in enumerate(resumed) if isinstance(e, ev.StepFinished)
    )
    journal = host.journal()
    assert journal.reboot is None
    assert journal.record("reboot").reboots == 1
    assert host.state().reboots == 1


def test_t02_a_reboot_that_did_not_happen_is_offered_again_and_nothing_advances(sim):
    host = sim(H100)
    host.scenario(reboot_does_nothing=True)  # `reboot` exits 0 and the machine stays up

    first = host.cli("apply", "--yes")
    second = host.cli("apply", "--yes")

    assert (first.returncode, second.returncode) == (10, 10), second.stdout + second.stderr
    assert "the reboot did not happen (the boot_id is unchanged)" in second.stdout
    assert host.commands()[("reboot",)] == 2
    assert not any(call.tool.startswith("python") for call in host.calls()), "no later step ran"
    states = host.step_states()
    assert states["reboot"] == "awaiting_reboot"
    assert states["blacklist-nouveau"] == "awaiting_reboot"
    assert states["create-env"] == "pending"
    assert host.journal().record("reboot").reboots == 1, "a reboot that never happened is no cycle"
    requested = host.events_of(ev.RebootRequested)
    assert [r.attempt for r in requested] == [1, 1], "offered again, as the same attempt"
    assert requested[1].reason.startswith("the reboot did not happen")


@pytest.mark.parametrize(
    "garbage",
    [
        pytest.param(None, id="file missing"),
        pytest.param("", id="empty"),
        pytest.param("error: Permission denied\n", id="an error message"),
        pytest.param("3f2a1c9e-77\n", id="a torn read"),
    ],
)
def test_t03_an_unreadable_boot_id_after_the_reboot_is_unknown_never_a_reboot(sim, garbage):
    host = sim(H100)
    host.plan()
    assert host.run() == EXIT_REBOOT
    host.reboot()
    boot_file = host.path("/proc/sys/kernel/random/boot_id")
    if garbage is None:
        boot_file.unlink()
    else:
        boot_file.write_text(garbage)
    calls = len(host.calls())
    seen = len(host.events())

    assert host.run() == EXIT_STOPPED

    resumed = host.events()[seen:]
    assert not any(isinstance(e, ev.RebootDetected) for e in resumed)
    stopped = [e for e in resumed if isinstance(e, ev.RunStopped)]
    assert [s.reason for s in stopped] == ["boot-unknown"]
    assert "unknown whether the reboot happened" in stopped[0].why
    assert host.step_states()["blacklist-nouveau"] == "awaiting_reboot", "not verified on a guess"
    assert host.journal().reboot is not None
    assert len(host.calls()) == calls

    boot_file.write_text(f"{uuid.uuid4()}\n")  # readable again: the reboot is judged for real
    assert host.run() == EXIT_DONE


def test_t03_an_unreadable_boot_id_is_unknown_never_a_reboot_and_the_person_is_asked(sim):
    host = sim(H100)
    host.plan()
    host.path("/proc/sys/kernel/random/boot_id").write_text("")
    host.path("/proc/stat").unlink(missing_ok=True)  # and no btime to stand in for it

    assert host.run() == EXIT_REBOOT  # asked for, to be judged by the person (issue 14)
    assert host.journal().reboot.signal == "person"
    assert host.run() == EXIT_STOPPED

    assert not host.events_of(ev.RebootDetected), "unknown is never counted as rebooted"
    assert host.events_of(ev.RunStopped)[-1].reason == "boot-unknown"
    assert "--rebooted yes or no" in host.events_of(ev.RunStopped)[-1].why
    assert host.step_states()["reboot"] == "awaiting_reboot"


def test_t04_after_two_reboots_that_do_not_help_the_run_stops_with_a_diagnosis(sim):
    host = sim(H100)
    host.scenario(nouveau_stays=True)  # an initramfs that always brings nouveau back
    host.plan()

    assert host.install() == [EXIT_REBOOT, EXIT_REBOOT, EXIT_FAILED]

    assert [r.attempt for r in host.events_of(ev.RebootRequested)] == [1, 2]
    stopped = host.events_of(ev.RunStopped)[-1]
    assert stopped.reason == "failed"
    assert "after 2 reboots" in stopped.why
    assert "nouveau is still loaded although blacklisted" in stopped.why
    assert host.step_states()["blacklist-nouveau"] == "failed"

    host.reboot()
    assert host.run() == EXIT_FAILED, "running again never asks for a third reboot"
    assert len(host.events_of(ev.RebootRequested)) == 2
    assert host.state().reboots == 3


@pytest.mark.parametrize(
    ("failpoint", "offers"),
    [
        pytest.param(
            "reboot.after_state_write", 1, id="reboot.after_state_write: before it was shown"
        ),
        pytest.param("reboot.before_cmd", 2, id="reboot.before_cmd: shown, not yet run"),
    ],
)
def test_t05_a_crash_around_the_reboot_request_offers_it_again_and_repeats_nothing(
    sim, failpoint, offers
):
    host = sim(H100)
    plan = host.plan()
    boot_before = host.boot_id()

    assert host.wait(host.launch(f"{failpoint}=kill")) == SIGKILLED
    assert f"failpoint {failpoint} hit 1: kill" in host.runner_log()
    assert host.boot_id() == boot_before
    assert host.commands()[("reboot",)] == 0

    assert host.finish() == [SIGKILLED, EXIT_DONE]  # killed by the reboot, then done

    assert [r.attempt for r in host.events_of(ev.RebootRequested)] == [1] * offers
    commands = host.commands()
    assert commands == planned_commands(plan), "every command once, the reboot included"
    assert commands[UPDATE_INITRAMFS] == 1, "the initramfs step had finished: not run again"
    assert host.path(NOUVEAU_CONF).read_text() == BLACKLIST
    assert [p.name for p in host.path("/etc/modprobe.d").iterdir()] == [
        "gpuwizard-blacklist-nouveau.conf"
    ]
    assert host.journal().record("reboot").reboots == 1


def test_t06_state_from_another_machine_is_never_resumed(sim):
    host = sim(H100)
    host.plan()
    assert host.run() == EXIT_REBOOT
    host.reboot()
    host.write("/etc/machine-id", "0badc10e0badc10e0badc10e0badc10e\n")  # a cloned disk
    calls = len(host.calls())
    states = host.step_states()

    assert host.run() == EXIT_STOPPED

    stopped = host.events_of(ev.RunStopped)[-1]
    assert stopped.reason == "other-machine"
    assert "belongs to another machine" in stopped.why
    assert host.step_states() == states
    assert len(host.calls()) == calls
    assert not host.journal().finished


def test_t08_a_kernel_update_waiting_for_a_reboot_is_finished_and_rebooted_before_the_driver(sim):
    host = sim(H100)
    host.write("/run/reboot-required", "*** System restart required ***\n")
    host.write("/run/reboot-required.pkgs", "linux-image-5.15.0-126-generic\nlinux-base\n")
    plan = host.plan()
    todo = [step.id for step in plan.steps if step.actions]
    assert todo.index("reboot-kernel") < todo.index("install-nvidia-driver")

    assert host.run() == EXIT_REBOOT

    assert host.events_of(ev.RebootRequested)[0].step == "reboot-kernel"
    assert not any("install" in call.argv for call in host.calls()), "no driver in that boot"
    host.reboot()
    assert host.install() == [EXIT_REBOOT, EXIT_DONE]
    assert [r.step for r in host.events_of(ev.RebootRequested)] == ["reboot-kernel", "reboot"]


def test_t18_secure_boot_with_dkms_enrolls_a_mok_and_a_rejected_key_is_diagnosed_not_looped(sim):
    host = sim(T4_DEBIAN)
    host.enable_secure_boot()
    host.scenario(mok_enrolled_at_console=False)  # nobody at the console: MokManager times out
    plan = host.plan()
    todo = [step.id for step in plan.steps if step.actions]
    assert todo.index("enroll-mok") < todo.index("install-nvidia-driver"), "warned before install"
    assert "MokManager" in plan.step("enroll-mok").why
    assert "signed prebuilt modules" in plan.step("enroll-mok").why

    assert host.finish(answer=MOK_PASSWORD) == [SIGKILLED, SIGKILLED, EXIT_FAILED]

    prompts = host.events_of(ev.PromptShown)
    assert [p.secret for p in prompts] == ["mok-password", "mok-password"], "once per boot"
    assert len(host.events_of(ev.RebootRequested)) == 2
    stopped = host.events_of(ev.RunStopped)[-1]
    assert stopped.reason == "failed"
    diagnosis = " ".join(e.reason for e in host.events_of(ev.StepFinished) if not e.ok)
    assert "Secure Boot rejects the DKMS-built module" in diagnosis
    assert "MOK key is not-enrolled" in diagnosis


def test_t21_a_kernel_installed_mid_run_without_a_module_blocks_the_reboot(sim):
    host = sim(H100)
    new_kernel = "5.15.0-127-generic"
    host.scenario(
        rules=[
            {
                "tool": "apt-get",
                "match": "nvidia-driver",
                "times": 1,
                "write_file": {f"/lib/modules/{new_kernel}/modules.dep": ""},
            }
        ]
    )
    host.plan()

    assert host.run() == EXIT_FAILED

    failed = host.events_of(ev.StepFinished)[-1]
    assert (failed.step, failed.ok) == ("install-nvidia-driver", False)
    assert f"no nvidia module was built for kernel {new_kernel}, which boots next" in failed.reason
    assert host.events_of(ev.RebootRequested) == []
    assert host.commands()[("reboot",)] == 0
    assert host.journal().reboot is None


def test_t22_a_failed_initramfs_rebuild_leaves_the_blacklist_step_undone_and_no_reboot(sim):
    host = sim(H100)
    host.scenario(
        rules=[{"tool": "update-initramfs", "exit": 1, "output": "E: mkinitramfs failure"}]
    )
    host.plan()

    assert host.run() == EXIT_FAILED

    assert host.step_states()["blacklist-nouveau"] == "failed"
    assert host.events_of(ev.RebootRequested) == []
    assert host.state().initramfs_blacklists_nouveau is False


def test_t22_nouveau_still_loaded_after_the_reboot_is_diagnosed_rebuilt_once_and_rebooted(sim):
    host = sim(H100)
    # update-initramfs says it worked but the initramfs stays stale, once.
    host.scenario(rules=[{"tool": "update-initramfs", "times": 1, "exit": 0}])
    host.plan()

    assert host.install() == [EXIT_REBOOT, EXIT_REBOOT, EXIT_DONE]

    retried = [e for e in host.events_of(ev.StepFinished) if e.step == "blacklist-nouveau"]
    assert not retried[0].ok
    assert (
        "nouveau is still loaded although blacklisted: the initramfs was not rebuilt"
        in retried[0].reason
    )
    assert retried[0].reason.endswith("trying once more")
    assert retried[-1].ok
    assert host.commands()[UPDATE_INITRAMFS] == 2
    assert [r.attempt for r in host.events_of(ev.RebootRequested)] == [1, 2], (
        "counts against the cap"
    )


def test_t23_a_driver_library_mismatch_after_an_unattended_upgrade_gets_a_reboot_and_a_hold_offer(
    sim,
):
    host = sim(H100)
    host.plan()
    assert host.install() == [EXIT_REBOOT, EXIT_DONE]
    upgraded = "580.105.08-0ubuntu1"  # unattended-upgrades replaced the libraries, no reboot
    host.set_state(
        packages={
            name: upgraded
            if name.startswith(("nvidia-driver-580", "nvidia-utils-580"))
            else version
            for name, version in host.state().packages.items()
        }
    )
    facts = host.facts()
    assert isinstance(facts.boot.nvml, NvmlUnavailable)
    assert "driver/library version mismatch" in facts.boot.nvml.reason
    table = load_table()
    advice = recommend(table, target_from_facts(facts, table), SetupRequest())
    assert any(
        "reboot to load the installed driver" in c and "--hold-driver" in c for c in advice.changes
    )

    plan = host.plan()

    assert [step.id for step in plan.steps if step.actions] == [
        "reboot-driver-update",
        "verify-torch",
    ]
    assert host.install() == [EXIT_REBOOT, EXIT_DONE]
    nvml = host.facts().boot.nvml
    assert isinstance(nvml, NvmlOk) and nvml.driver_version == "580.105.08"
