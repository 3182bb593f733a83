"""apt, dpkg and the commands' own failures against the simulated host (reliability.md §9:
T07, T12, T15-T17, T19, T20, T24, T27-T29, T31).

Fresh cloud servers are hostile to apt: cloud-init still at work, a lock held by
unattended-upgrades, a dpkg interrupted by a crash, a prompt that slips through, a module that
does not build. The runner must wait, repair, refuse or stop with the cause, never hang and never
reboot into a machine without a driver. The runner runs in-process unless a kill is the point.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from gpuwizard.core.hints import match as known_error
from gpuwizard.core.request import SetupRequest
from gpuwizard.runner import events as ev
from gpuwizard.runner import executor
from gpuwizard.runner.layout import EXIT_DONE, EXIT_FAILED, EXIT_REBOOT
from gpuwizard.runner.lock import runner_status
from gpuwizard.setup.plan import PlanningError
from tests.sim.conftest import H100, SIGKILLED, wait_for

REPAIR = ("dpkg", "--force-confdef", "--force-confold", "--configure", "-a")
DPKG_INTERRUPTED = (
    "E: dpkg was interrupted, you must manually run 'dpkg --configure -a' to correct the problem."
)
APT_ENV = {
    "DEBIAN_FRONTEND": "noninteractive",
    "UCF_FORCE_CONFFOLD": "1",
    "NEEDRESTART_MODE": "l",
    "NEEDRESTART_SUSPEND": "1",
}
DAEMON_JSON = "/etc/docker/daemon.json"


def is_driver_install(key: tuple[str, ...]) -> bool:
    return key[0] == "apt-get" and "install" in key and "nvidia-driver-580-server-open" in key


def output_of(host, step: str) -> list[str]:
    """The display lines a step printed, as the front ends received them."""
    return [line for e in host.events_of(ev.LogLines) if e.step == step for line in e.lines]


# ------------------------------------------------------------------------------ cloud-init
def test_t07_apt_waits_until_a_running_cloud_init_has_finished(sim):
    host = sim(H100)
    host.set_state(cloud_init="running")
    host.scenario(rules=[{"tool": "cloud-init", "match": "--wait", "sleep_s": 0.5}])
    host.plan()

    assert host.run() == EXIT_REBOOT

    calls = host.calls()
    assert calls[0].argv == ("cloud-init", "status", "--wait")
    first_apt = next(call for call in calls if call.tool == "apt-get")
    assert first_apt.time >= calls[0].time + 0.5, "no apt call before the wait ended"
    assert host.step_states()["wait-cloud-init"] == "done"


def test_t07_cloud_init_degraded_continues_with_a_warning(sim):
    host = sim(H100)
    host.set_state(cloud_init="running")
    host.scenario(cloud_init_ends="degraded")  # `cloud-init status --wait` exits 2
    host.plan()

    assert host.run() == EXIT_REBOOT

    waited = next(e for e in host.events_of(ev.StepFinished) if e.step == "wait-cloud-init")
    assert waited.ok
    assert waited.reason.startswith(
        "warning: cloud-init finished with recoverable errors (degraded)"
    )
    assert any(call.tool == "apt-get" for call in host.calls()), "the install went on"


def test_t07_cloud_init_in_error_stops_the_run_before_any_apt_call(sim):
    host = sim(H100)
    host.set_state(cloud_init="running")
    host.scenario(cloud_init_ends="error")  # `cloud-init status --wait` exits 1
    host.plan()

    assert host.run() == EXIT_FAILED

    failed = host.events_of(ev.StepFinished)[-1]
    assert (failed.step, failed.ok, failed.reason) == ("wait-cloud-init", False, "exited 1")
    assert "status: error" in output_of(host, "wait-cloud-init")
    assert [call.tool for call in host.calls()] == ["cloud-init"]


def test_t07_a_host_without_cloud_init_has_no_wait(sim):
    host = sim(H100)
    host.set_state(cloud_init="absent")  # `cloud-init`: command not found
    plan = host.plan()

    assert "wait-cloud-init" not in [step.id for step in plan.steps]
    assert host.run() == EXIT_REBOOT
    assert not any(call.tool == "cloud-init" for call in host.calls())


# ------------------------------------------------------------------------ dpkg and locks
def test_t12_a_runner_killed_mid_apt_is_interrupted_and_dpkg_is_repaired_before_apt_runs_again(sim):
    host = sim(H100)
    host.scenario(
        rules=[
            {
                "tool": "apt-get",
                "match": "nvidia-driver",
                "times": 1,
                "output": "Unpacking ...",
                "sleep_s": 60,
            }
        ]
    )
    host.plan()
    runner = host.launch()
    wait_for(lambda: host.state().dpkg_interrupted, "apt to be half-way through the install")

    os.killpg(runner.pid, signal.SIGKILL)  # the OOM killer, or an admin's kill -9
    assert runner.wait(timeout=10) == SIGKILLED
    wait_for(lambda: not host.survivors(), "apt to die with the runner's terminal (SIGHUP)")

    assert runner_status(host.state_dir, host.facts().boot.boot_id) == "interrupted"
    assert host.step_states()["install-nvidia-driver"] == "running"
    assert host.facts().boot.dpkg_interrupted
    killed_at = len(host.calls())

    assert host.finish() == [SIGKILLED, EXIT_DONE]  # the reboot, then the rest

    resumed = host.calls()[killed_at:]
    assert resumed[0].key == REPAIR, "dpkg is repaired before apt runs again"
    assert resumed[0].env == APT_ENV
    assert is_driver_install(resumed[1].key)
    assert sum(is_driver_install(call.key) for call in host.calls()) == 2


def test_t15_a_held_dpkg_lock_is_waited_for_with_its_holder_named_and_never_deleted(
    sim, monkeypatch
):
    monkeypatch.setattr(executor, "LOCK_BACKOFF_S", 0.01)
    host = sim(H100)
    locks = ("/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock", "/var/lib/apt/lists/lock")
    for lock in locks:
        host.write(lock, "")
    lists_locked = "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4750 (unattended-upgr)"
    host.scenario(
        dpkg_lock={"holder": "4750 (unattended-upgr)", "calls": 1, "wait_s": 0.3},
        rules=[
            {"tool": "apt-get", "match": "update", "times": 2, "exit": 100, "output": lists_locked}
        ],
    )
    host.plan()

    assert host.run() == EXIT_REBOOT

    commands = host.commands()
    assert commands[("apt-get", "-q", "update")] == 4, "2 refused, then once per step"
    installs = [call.argv for call in host.calls() if "install" in call.argv]
    assert installs and all("DPkg::Lock::Timeout=600" in argv for argv in installs)
    driver = output_of(host, "install-nvidia-driver")
    assert any(
        line.startswith("gpuwizard: unattended-upgr (pid 4750) holds the package lock; waiting")
        for line in driver
    )
    assert any(line.startswith("Waiting for cache lock") for line in driver), "apt waited itself"
    assert all(host.path(lock).exists() for lock in locks)
    assert {call.tool for call in host.calls()} <= {
        "apt-get",
        "update-initramfs",
        "systemctl",
        "dpkg",
    }


def test_t16_an_interrupted_dpkg_is_repaired_noninteractively_and_the_command_retried_once(sim):
    host = sim(H100)
    host.scenario(
        rules=[
            {
                "tool": "apt-get",
                "match": "nvidia-driver",
                "times": 1,
                "exit": 100,
                "output": DPKG_INTERRUPTED,
            }
        ]
    )
    host.plan()

    assert host.run() == EXIT_REBOOT

    keys = [call.key for call in host.calls()]
    first = next(i for i, key in enumerate(keys) if is_driver_install(key))
    assert keys[first + 1] == REPAIR
    assert host.calls()[first + 1].env == APT_ENV
    assert is_driver_install(keys[first + 2])
    assert host.step_states()["install-nvidia-driver"] == "done"


def test_t16_dpkg_still_interrupted_after_one_repair_stops_with_instructions(sim):
    host = sim(H100)
    host.scenario(
        rules=[
            {
                "tool": "apt-get",
                "match": "nvidia-driver",
                "times": 2,
                "exit": 100,
                "output": DPKG_INTERRUPTED,
            }
        ]
    )
    host.plan()

    assert host.run() == EXIT_FAILED

    commands = host.commands()
    assert commands[REPAIR] == 1
    assert sum(n for key, n in commands.items() if is_driver_install(key)) == 2
    failed = host.events_of(ev.StepFinished)[-1]
    assert failed.step == "install-nvidia-driver"
    assert "run `dpkg --configure -a` by hand" in failed.reason
    assert host.events_of(ev.RebootRequested) == []


def test_t17_a_prompt_that_slips_through_reads_eof_because_no_apt_call_has_a_terminal(sim):
    host = sim(H100)
    prompt = (
        "Configuration file '/etc/nvidia/nvidia-persistenced.conf'\n"
        " ==> Modified (by you or by a script) since installation.\n"
        "*** nvidia-persistenced.conf (Y/I/N/O/D/Z) [default=N] ? "
    )
    host.scenario(
        rules=[{"tool": "apt-get", "match": "nvidia-driver", "times": 1, "prompt": prompt}]
    )
    host.plan()

    assert host.run() == EXIT_REBOOT  # did not hang on the question

    package_calls = [call for call in host.calls() if call.tool in ("apt-get", "dpkg")]
    assert package_calls
    for call in package_calls:
        assert call.env == APT_ENV, call.argv
        assert call.stdin_tty is False, call.argv
    assert any(
        "(Y/I/N/O/D/Z) [default=N] ?" in line for line in output_of(host, "install-nvidia-driver")
    )


# -------------------------------------------------------------------- the driver's traps
def test_t19_missing_headers_stop_the_run_before_nouveau_is_blacklisted_or_a_driver_installed(sim):
    host = sim(H100)
    kernel = "5.15.0-126-generic"
    host.sandbox.set_link(f"/lib/modules/{kernel}/build", None)
    gone = f"E: Unable to locate package linux-headers-{kernel}"
    host.scenario(
        rules=[{"tool": "apt-get", "match": "linux-headers", "exit": 100, "output": gone}]
    )

    applied = host.cli("apply", "--yes")

    assert applied.returncode == EXIT_FAILED, applied.stdout + applied.stderr
    assert "FAILED: install-headers" in applied.stdout
    assert "what to do: Update the system and reboot into the newest kernel" in applied.stdout
    states = host.step_states()
    assert states["install-headers"] == "failed"
    assert states["blacklist-nouveau"] == states["install-nvidia-driver"] == "pending"
    assert not host.path("/etc/modprobe.d/gpuwizard-blacklist-nouveau.conf").exists()
    assert not any(is_driver_install(call.key) for call in host.calls())


def test_t20_a_dkms_build_failure_fails_the_step_with_its_make_log_and_offers_no_reboot(sim):
    host = sim(H100)
    host.scenario(dkms_fails=True)
    host.plan()

    assert host.run() == EXIT_FAILED

    failed = host.events_of(ev.StepFinished)[-1]
    assert (failed.step, failed.ok) == ("install-nvidia-driver", False)
    lines = output_of(host, "install-nvidia-driver")
    assert any("/var/lib/dkms/nvidia/580.178.04/build/make.log" in line for line in lines)
    assert known_error(lines).id == "dkms-build"
    assert host.events_of(ev.RebootRequested) == []
    assert host.commands()[("reboot",)] == 0

    failed_at = len(host.calls())
    host.scenario()  # the build problem fixed: running again finishes the job
    assert host.install() == [EXIT_REBOOT, EXIT_DONE]
    retried = [call.key for call in host.calls()[failed_at:]]
    assert retried[0] == REPAIR, "the half-configured packages are finished first"
    assert sum(is_driver_install(key) for key in retried) == 1


# ------------------------------------------------------------------------ docker's config
def test_t24_the_nvidia_runtime_is_merged_into_daemon_json_keeping_every_key(sim):
    host = sim(H100)
    custom = {"data-root": "/data/docker", "registry-mirrors": ["https://mirror.example"]}
    host.write(DAEMON_JSON, json.dumps(custom))
    host.plan(SetupRequest(docker=True))

    assert host.install() == [EXIT_REBOOT, EXIT_DONE]

    merged = json.loads(host.path(DAEMON_JSON).read_text())
    assert {k: merged[k] for k in custom} == custom
    assert merged["runtimes"]["nvidia"]["path"] == "nvidia-container-runtime"


def test_t24_an_invalid_daemon_json_is_refused_at_planning_and_never_overwritten(sim):
    host = sim(H100)
    host.write(DAEMON_JSON, '{"data-root": "/data/docker",')

    with pytest.raises(PlanningError, match=r"daemon\.json is not valid JSON .*left untouched"):
        host.plan(SetupRequest(docker=True))

    assert host.path(DAEMON_JSON).read_text() == '{"data-root": "/data/docker",'
    assert host.calls() == []


def test_t24_a_docker_restart_failure_restores_daemon_json_byte_for_byte(sim):
    host = sim(H100)
    original = b'{\n  "data-root": "/data/docker"\n}\n'
    host.path(DAEMON_JSON).parent.mkdir(parents=True, exist_ok=True)
    host.path(DAEMON_JSON).write_bytes(original)
    host.scenario(
        rules=[
            {
                "tool": "systemctl",
                "match": "restart docker",
                "exit": 1,
                "output": "Job for docker.service failed",
            }
        ]
    )
    host.plan(SetupRequest(docker=True))

    assert host.install() == [EXIT_REBOOT, EXIT_FAILED]

    assert host.path(DAEMON_JSON).read_bytes() == original
    failed = host.events_of(ev.StepFinished)[-1]
    assert failed.step == "install-container-toolkit"
    assert f"restored {host.path(DAEMON_JSON)}" in failed.reason


# ---------------------------------------------------------------- what commands print
def test_t27_a_password_line_in_apt_output_is_not_taken_for_a_prompt(sim):
    host = sim(H100)
    host.scenario(
        rules=[
            {"tool": "apt-get", "match": "nvidia-driver", "output": "Setting up pam ...\nPassword:"}
        ]
    )
    host.plan()

    assert host.run() == EXIT_REBOOT

    assert host.events_of(ev.PromptShown) == []
    assert "Password:" in output_of(host, "install-nvidia-driver")


def test_t28_an_output_flood_is_all_in_the_log_while_the_event_stream_stays_bounded(sim):
    host = sim(H100)
    host.scenario(rules=[{"tool": "apt-get", "match": "update", "times": 1, "flood_mb": 8}])
    host.plan()

    assert host.run() == EXIT_REBOOT

    log = host.state_dir / "logs" / host.journal().run_id / "install-nvidia-driver.log"
    assert log.stat().st_size > 8 * 1024 * 1024
    events = (host.state_dir / "events.jsonl").stat().st_size
    assert events < 1_000_000  # a reader's share (eventquota), whatever the flood
    flood = [e for e in host.events_of(ev.LogLines) if e.step == "install-nvidia-driver"]
    shown = sum(len(e.lines) for e in flood)
    assert shown + sum(e.dropped for e in flood) >= 8 * 1024 * 1024 // 190  # every line counted
    assert shown <= 5_000 + 20


def test_t29_bad_bytes_escapes_and_progress_bars_are_cleaned_for_display_and_kept_raw_in_the_log(
    sim,
):
    host = sim(H100)
    raw = "\xff\xfebad\r\n\x1b[31mred\x1b[0m\x00nul\nGet 10%\rGet 100%\n"
    host.scenario(rules=[{"tool": "apt-get", "match": "update", "times": 1, "raw": raw}])
    host.plan()

    assert host.run() == EXIT_REBOOT

    lines = output_of(host, "install-nvidia-driver")
    assert "\ufffd\ufffdbad" in lines
    assert "rednul" in lines
    assert "Get 100%" in lines and "Get 10%\rGet 100%" not in lines
    log = host.state_dir / "logs" / host.journal().run_id / "install-nvidia-driver.log"
    as_the_terminal_sent_it = raw.encode("latin-1").replace(b"\n", b"\r\n")  # the pty's ONLCR
    assert as_the_terminal_sent_it in log.read_bytes()


def test_t31_a_tool_killed_by_sigkill_fails_its_step_naming_the_signal(sim):
    host = sim(H100)
    host.scenario(rules=[{"tool": "apt-get", "match": "nvidia-driver", "times": 1, "signal": 9}])
    host.plan()

    assert host.run() == EXIT_FAILED

    finished = [e for e in host.events_of(ev.ActionFinished) if not e.ok]
    assert [e.result for e in finished] == ["killed by SIGKILL"]
    assert host.events_of(ev.StepFinished)[-1].reason == "killed by SIGKILL"
    assert host.facts().boot.dpkg_interrupted, (
        "a killed apt leaves dpkg half-way, as on a real host"
    )


def test_t31_an_error_line_from_a_command_that_exits_0_is_only_a_warning(sim):
    host = sim(H100)
    warning = (
        "E: Some index files failed to download. They have been ignored, or old ones used instead."
    )
    host.scenario(rules=[{"tool": "apt-get", "match": "update", "times": 1, "output": warning}])
    host.plan()

    assert host.run() == EXIT_REBOOT

    assert warning in output_of(host, "install-nvidia-driver")
    assert all(e.ok for e in host.events_of(ev.ActionFinished))
