"""Two `apply` commands on one simulated machine: a second one with other options is refused
with exit 2 naming the option, before anything changes; the same command continues the run
(issue 14)."""

from __future__ import annotations

import subprocess
import time

from gpuwizard.runner.layout import EXIT_DONE, EXIT_REBOOT
from gpuwizard.runner.lock import runner_status
from tests.sim.conftest import GPUWIZARD, H100, WAIT_S


def test_a_second_apply_with_other_options_is_refused_and_the_same_one_continues(sim):
    host = sim(H100)

    first = host.cli("apply", "--yes", "--cudnn")
    assert first.returncode == EXIT_REBOOT, first.stdout + first.stderr
    calls, journal = len(host.calls()), host.journal()

    other = host.cli("apply", "--yes", "--cudnn", "--docker", "--env-name", "ml")

    assert other.returncode == 2, other.stdout + other.stderr
    [line] = other.stderr.splitlines()
    assert line.startswith("gpuwizard: the setup in progress on this machine (run-")
    assert "--docker: the run in progress has off, this command asks on" in line
    assert "--env-name: the run in progress has 'pytorch', this command asks 'ml'" in line
    assert len(host.calls()) == calls, "nothing ran"
    assert host.journal() == journal, "nothing was merged into the run"

    dropped = host.cli("apply", "--yes")
    assert dropped.returncode == 2 and "--cudnn: the run in progress has on" in dropped.stderr

    same = host.cli("apply", "--yes", "--cudnn")
    assert same.returncode == EXIT_DONE, same.stdout + same.stderr
    assert host.journal().run_id == journal.run_id, "the same run, continued"


def test_while_a_runner_is_at_work_another_request_is_refused_and_the_same_one_follows(sim):
    host = sim(H100)
    host.scenario(rules=[{"tool": "apt-get", "match": "install", "times": 1, "sleep_s": 2}])
    first = subprocess.Popen(
        [*GPUWIZARD, "apply", "--yes", "--nccl", "--simulate", host.profile],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=host.cli_env(),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + WAIT_S
        while runner_status(host.state_dir, host.facts().boot.mark) != "running":
            assert first.poll() is None and time.monotonic() < deadline, "no runner came up"
            time.sleep(0.05)

        other = host.cli("apply", "--yes")
        same = host.cli("apply", "--yes", "--nccl")
    finally:
        output, _ = first.communicate(timeout=WAIT_S)

    assert other.returncode == 2, other.stdout + other.stderr
    assert "--nccl: the run in progress has on, this command asks off" in other.stderr
    assert "following it" in same.stdout, same.stdout + same.stderr
    assert same.returncode == first.returncode, output
