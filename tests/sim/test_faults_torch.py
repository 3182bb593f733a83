"""The PyTorch install by uv under faults: a runner killed mid-install redoes it on the next run,
and a hashes file without the environment's wheel fails the step (as uv's hash check would)."""

from __future__ import annotations

import os
import signal

from gpuwizard.runner.layout import EXIT_DONE, EXIT_FAILED
from gpuwizard.sim import effects
from tests.sim.conftest import H100, SIGKILLED, planned_commands, wait_for

ENV = "/opt/gpuwizard/envs/pytorch"


def is_uv_torch_install(key: tuple[str, ...]) -> bool:
    return key[:3] == ("uv", "pip", "install") and "--reinstall-package" in key


def test_a_runner_killed_while_uv_installs_torch_redoes_the_install_on_the_next_run(sim):
    host = sim(H100)  # cu130: PyPI's default build, installed from the pinned hashes file
    host.scenario(
        rules=[
            {
                "tool": "uv",
                "match": "--reinstall-package torch",
                "times": 1,
                "output": "Prepared 31 packages",
                "sleep_s": 60,
            }
        ]
    )
    plan = host.plan()
    assert host.wait(host.launch()) == SIGKILLED  # ended by the fake reboot
    runner = host.launch()
    wait_for(
        lambda: any(is_uv_torch_install(call.key) for call in host.calls()),
        "uv to be installing torch",
    )

    os.killpg(runner.pid, signal.SIGKILL)
    assert runner.wait(timeout=10) == SIGKILLED
    wait_for(lambda: not host.survivors(), "uv to die with the runner")
    assert host.step_states()["install-torch"] == "running"
    assert effects.installed_torch(host.sandbox, ENV) is None
    killed_at = len(host.calls())

    assert host.finish() == [EXIT_DONE]

    again = [call.key for call in host.calls()[killed_at:]]
    assert any(is_uv_torch_install(key) for key in again), "the install is redone"
    assert sum(is_uv_torch_install(call.key) for call in host.calls()) == 2
    assert effects.installed_torch(host.sandbox, ENV) == "2.14.1"
    extra = host.commands() - planned_commands(plan)
    assert sum(extra.values()) == 1, f"only the interrupted install runs twice: {extra}"
    assert host.step_states()["verify-torch"] == "done"


def test_a_hashes_file_without_this_pythons_wheel_fails_the_torch_install(sim):
    host = sim(H100)
    plan = host.plan()
    hashes = next(
        a.path
        for a in plan.step("install-torch").actions
        if getattr(a, "path", "").endswith(".hashes.txt")
    )
    # The hashes file as a tampered download folder would leave it: no cp310 wheel listed.
    host.scenario(
        rules=[
            {
                "tool": "uv",
                "match": "--reinstall-package torch",
                "write_file": {hashes: "torch==2.14.1 \\\n    --hash=sha256:" + "0" * 64 + "\n"},
            }
        ]
    )
    codes = host.finish()
    assert codes[-1] == EXIT_FAILED
    assert host.step_states()["install-torch"] == "failed"
    assert effects.installed_torch(host.sandbox, ENV) is None


def test_another_cuda_build_of_the_same_torch_is_installed_again_not_audited(sim):
    """torch==2.14.1 is met by 2.14.1+cu128 (PEP 440): without --reinstall-package uv keeps it,
    the step's verify fails on every run and deploy.sh ends with the wrong build."""
    host = sim(H100)
    site = host.sandbox.path(f"{ENV}/lib/python3.10/site-packages")
    site.mkdir(parents=True)
    host.sandbox.path(f"{ENV}/pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.10.12\n")
    (site / "torch-2.14.1+cu128.dist-info").mkdir()
    pins = [
        "--python",
        f"{ENV}/bin/python",
        "--index-url",
        "https://pypi.org/simple",
        "torch==2.14.1",
    ]
    lines, code = effects.uv_pip_install(host.sandbox, pins)
    assert code == 0 and "Installed 0 packages" in lines  # what uv does: audited, kept
    assert [d.name for d in site.glob("torch-*.dist-info")] == ["torch-2.14.1+cu128.dist-info"]
    again = ["--reinstall-package", "torch", *pins]
    lines, code = effects.uv_pip_install(host.sandbox, again)
    assert code == 0 and " + torch==2.14.1" in lines
    assert [d.name for d in site.glob("torch-*.dist-info")] == ["torch-2.14.1.dist-info"]


def test_the_planned_torch_install_always_installs_the_set_again(sim):
    host = sim(H100)
    install = [key for key in planned_commands(host.plan()) if is_uv_torch_install(key)]
    assert install and all(
        "--reinstall-package torch --reinstall-package torchvision" in " ".join(key)
        for key in install
    )
