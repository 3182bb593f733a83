"""Planning for and running the wizard's runner on a chroot machine, in this process.

``plan_on`` detects the machine through its ``ChrootHost`` and plans as ``gpuwizard apply``
does; ``run_runner`` is one runner session (the real ``run_session``, the real executor and pty
driver) whose every command goes through ``tests.chroot.shim`` into the root. The in-process
runner stops at a reboot instead of running it; the test makes the new boot itself (``reboot``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.plan import Plan
from gpuwizard.core.request import SetupRequest
from gpuwizard.core.selection import Selection
from gpuwizard.machine.detect import detect_host
from gpuwizard.recommend.table import load_table
from gpuwizard.runner.control import prepare_run
from gpuwizard.runner.executor import Tools
from gpuwizard.runner.session import SessionOptions, run_session
from gpuwizard.setup.plan import make_plan
from tests.chroot.host import chroot_host
from tests.chroot.machine import ChrootMachine
from tests.chroot.roots import REPO
from tests.chroot.shim import MACHINE_ENV

REBOOT_EXIT = 10


def facts_of(machine: ChrootMachine) -> HostFacts:
    return detect_host(chroot_host(machine))


@dataclass(frozen=True)
class Planned:
    plan: Plan
    selection: Selection
    facts: HostFacts


def plan_on(machine: ChrootMachine, request: SetupRequest | None = None) -> Planned:
    facts = facts_of(machine)
    plan, selection = make_plan(load_table(), facts, request or SetupRequest())
    return Planned(plan, selection, facts)


def machine_tools(machine: ChrootMachine) -> Tools:
    return Tools(
        shim=(
            sys.executable,
            "-P",
            "-m",
            "tests.chroot.shim",
        ),  # -P: it needs PYTHONPATH (-I drops it)
        env={MACHINE_ENV: str(machine.folder), "PYTHONPATH": str(REPO)},
    )


def start_run(machine: ChrootMachine, planned: Planned) -> str:
    return prepare_run(machine.state_dir, planned.plan, planned.selection, planned.facts)


def ahead_command(machine: ChrootMachine) -> tuple[str, ...]:
    """The fetching-ahead process for this machine (runner/prefetch.py), as the runner starts it."""
    here = ("env", f"PYTHONPATH={REPO}", sys.executable, "-P", "-m", "tests.chroot.drive")
    return (*here, "ahead", str(machine.folder))


def run_runner(machine: ChrootMachine, *, ahead: bool = False) -> int:
    """One runner session; 10 when it stopped for a reboot, 0 when every step is done.
    With ``ahead``, it fetches later steps' downloads beside the steps, as the real runner does."""
    options = SessionOptions(ahead_command=ahead_command(machine) if ahead else None)
    return run_session(
        lambda: chroot_host(machine), machine_tools(machine), machine.state_dir, options
    )


def reboot(machine: ChrootMachine) -> str:
    """The reboot the person confirmed: the root's stand-in makes the new boot."""
    machine.run(["reboot"], check=True)
    return machine.boot_id()


if __name__ == "__main__":  # the fetching-ahead process: ``ahead MACHINE_FOLDER``
    from pathlib import Path

    from gpuwizard.runner.prefetch import run_ahead

    assert sys.argv[1] == "ahead", sys.argv
    chroot = ChrootMachine(Path(sys.argv[2]))
    sys.exit(run_ahead(chroot_host(chroot), machine_tools(chroot), chroot.state_dir))
