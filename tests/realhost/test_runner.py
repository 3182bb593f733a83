"""The real runner and the real machine's backend, driven on this machine up to what would change it.

The runner (``python -m gpuwizard.runner``) runs here for real, over an empty plan in a
temporary state folder: it takes its lock, detects this machine, writes its record and events,
and finishes, changing nothing else. The systemd-run launch goes through a stand-in
``systemd-run`` that records its arguments and runs the unit's command as systemd would; the
reboot is carried out up to its command, which is captured instead of run.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
from pathlib import Path

import pytest

from gpuwizard.core.paths import STATE_DIR
from gpuwizard.core.plan import Plan
from gpuwizard.core.request import SetupRequest
from gpuwizard.core.selection import Selection
from gpuwizard.frontends import cli
from gpuwizard.machine.detect import detect_host, local_host
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.planner import plan_for
from gpuwizard.recommend.result import Recommendation
from gpuwizard.recommend.target import target_from_facts
from gpuwizard.runner.control import launch, prepare_run
from gpuwizard.runner.lock import read_run_record
from tests.conftest import facts_of

pytestmark = pytest.mark.timeout(120)

FAKE_SYSTEMD_RUN = """#!/bin/sh
# systemd-run's stand-in: record the arguments, drop the options, run the unit's command.
printf '%s\\n' "$@" > "$GPUWIZARD_TEST_SYSTEMD_RUN_ARGS"
while [ $# -gt 0 ]; do case "$1" in --*) shift ;; *) break ;; esac; done
exec "$@"
"""


def any_selection() -> Selection:
    """A real selection (of a recorded server): the runner needs one in its journal."""
    facts = facts_of("h100x8-ubuntu2204-fresh")
    from gpuwizard.recommend.table import load_table

    table = load_table()
    result = recommend(table, target_from_facts(facts, table), SetupRequest())
    assert isinstance(result, Recommendation)
    selection, _ = plan_for(facts, result, SetupRequest(), table)
    return selection


def empty_run(state_dir: Path) -> None:
    """A reviewed plan with nothing to do, for this machine."""
    facts = detect_host(local_host())
    plan = Plan(schema=1, steps=(), machine_id=facts.machine_id, boot_id=facts.boot.boot_id)
    prepare_run(state_dir, plan, any_selection(), facts)


def events_of(state_dir: Path) -> list[str]:
    lines = (state_dir / "events.jsonl").read_text().splitlines()
    return [json.loads(line)["event"]["kind"] for line in lines]


def test_the_real_machine_backend(tmp_path: Path) -> None:
    backend = cli.real_backend()
    assert backend.name == socket.gethostname() and not backend.simulated
    assert backend.state_dir == Path(STATE_DIR)
    assert backend.runner[:7] == (
        sys.executable,
        "-I",  # isolated (issue 28): nothing in the folder it was started from is imported
        "-m",
        "gpuwizard.runner",
        "run",
        "--state",
        STATE_DIR,
    )
    assert backend.host().root == Path("/")
    assert cli.real_backend(tmp_path).runner[6] == str(tmp_path)


def test_the_real_reboot_runs_systemctl_reboot() -> None:
    ran: list[list[str]] = []
    cli.reboot_this_machine(run=ran.append)
    assert ran == [["systemctl", "reboot"]]
    assert cli.real_backend().reboot is cli.reboot_this_machine


def test_the_real_runner_runs_an_empty_plan_here_and_finishes(tmp_path: Path) -> None:
    state = tmp_path / "state"
    empty_run(state)
    process = launch(cli.real_backend(state).runner, state)  # no systemd here: a new session
    assert process.wait(timeout=60) == 0, (state / "runner.log").read_text()
    record = read_run_record(state)
    assert record is not None and record.outcome == "done"
    assert events_of(state) == ["run-started", "run-finished"]


def test_the_real_runner_starts_through_systemd_run_as_a_transient_unit(tmp_path: Path) -> None:
    state, bin_dir = tmp_path / "state", tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "systemd-run"
    fake.write_text(FAKE_SYSTEMD_RUN)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    recorded = tmp_path / "systemd-run-args"
    empty_run(state)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "GPUWIZARD_TEST_SYSTEMD_RUN_ARGS": str(recorded),
    }
    process = launch(cli.real_backend(state).runner, state, env=env, systemd=True)
    assert process.wait(timeout=60) == 0, (state / "runner.log").read_text()
    args = recorded.read_text().splitlines()
    log = state / "runner.log"
    assert args[0].startswith("--unit=gpuwizard-run-") and args[1:3] == ["--collect", "--quiet"]
    assert args[3:5] == [
        f"--property=StandardOutput=append:{log}",
        f"--property=StandardError=append:{log}",
    ]
    assert args[5:] == list(cli.real_backend(state).runner)
    assert events_of(state) == ["run-started", "run-finished"]


def ahead_command(state_dir: Path) -> list[str]:
    """The real runner's fetching-ahead process, as the real runner starts it."""
    return [*cli.real_backend(state_dir).runner[:4], "ahead", "--state", str(state_dir)]


def test_the_real_fetching_ahead_process_over_a_plan_with_nothing_ahead_ends_clean(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    empty_run(state)
    process = launch(ahead_command(state), state)
    assert process.wait(timeout=60) == 0, (state / "runner.log").read_text()
    assert not (state / "ahead.json").exists()  # nothing was due
    assert not Path("/var/cache/gpuwizard/ahead").exists()


def test_the_real_fetching_ahead_process_without_a_run_says_so_in_one_line(tmp_path: Path) -> None:
    import subprocess

    done = subprocess.run(ahead_command(tmp_path), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert (
        done.stderr
        == f"gpuwizard: fetching ahead stopped: no journal at {tmp_path}/journal.json: nothing to resume\n"
    )
