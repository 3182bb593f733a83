"""A run planned before operations were typed (plan schema 1) resumes after an upgrade.

The journal of a run in progress holds its plan. These runs start with today's gpuwizard, stop
(at the reboot, or killed between the two commands of a step), and then have their journal's
plan replaced by what the schema-1 gpuwizard wrote for it (``tests.schema1``, checked against
runs it really wrote); the real runner then resumes on the simulated host. Every planned command
runs exactly once, in the end the machine is set up, and the journal is saved as schema 2.
"""

from __future__ import annotations

import json

import pytest

from gpuwizard.core.plan import Plan, WriteFile
from gpuwizard.runner.layout import EXIT_DONE, EXIT_REBOOT, JOURNAL
from tests.schema1 import v1_plan
from tests.sim.conftest import H100, SIGKILLED, SimHost, planned_commands


def as_schema_1(host: SimHost, plan: Plan) -> None:
    """The journal and its backup as the schema-1 gpuwizard wrote them; records left as they are."""
    journal = host.state_dir / JOURNAL
    for path in (journal, journal.with_name(journal.name + ".bak")):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["plan"]["schema"] == 2
        data["plan"] = v1_plan(plan)
        path.write_text(json.dumps(data, indent=1), encoding="utf-8")


def assert_resumed(host: SimHost, plan: Plan, *, reboots: bool = True) -> None:
    commands = planned_commands(plan, reboots=reboots)
    assert host.commands() == commands, "every planned command, each once"
    journal = host.journal()
    assert journal.finished
    assert journal.plan == plan, "the schema-1 plan was read into the same typed operations"
    saved = json.loads((host.state_dir / JOURNAL).read_text(encoding="utf-8"))
    assert saved["plan"]["schema"] == 2


def test_a_schema_1_run_waiting_for_its_reboot_resumes_after_it(sim):
    host = sim(H100)
    plan = host.plan()
    assert host.run() == EXIT_REBOOT
    assert host.step_states()["reboot"] == "awaiting_reboot"

    as_schema_1(host, plan)
    host.reboot()
    assert host.run() == EXIT_DONE

    assert_resumed(host, plan, reboots=False)  # the in-process runner leaves the reboot to us


def second_command_of_a_step(plan: Plan) -> tuple[str, int]:
    """(step id, how many commands run before it): a step killed between two of its commands."""
    before = 0
    for step in plan.steps:
        commands = [a for a in step.actions if not isinstance(a, WriteFile)]
        if len(commands) >= 2 and len(commands) == len(step.actions) and not step.reboot:
            return step.id, before + 1
        before += len(commands)
    raise AssertionError("no step with two commands in this plan")


@pytest.mark.slow
def test_a_schema_1_run_killed_inside_a_step_resumes_at_its_next_command(sim):
    host = sim(H100)
    plan = host.plan()
    step_id, ran = second_command_of_a_step(plan)

    killed = host.wait(host.launch(f"executor.before_run=kill@{ran + 1}"))
    assert killed == SIGKILLED
    record = host.journal().record(step_id)
    assert (record.state, record.next_action) == ("running", 1), "killed inside the step"

    as_schema_1(host, plan)
    assert host.finish() == [SIGKILLED, EXIT_DONE]  # the fake reboot kills the runner

    assert_resumed(host, plan)
