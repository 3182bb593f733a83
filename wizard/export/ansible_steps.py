"""The Ansible export's steps: each plan step's tasks, run once per server and then skipped.

A playbook runs every task on every run, but the plan's commands (update-initramfs, modprobe,
the pip upgrade, the reboot) are not idempotent on their own. So each step is guarded as
deploy.sh guards it: a ``stat`` of its marker (/var/lib/gpuwizard/ansible/<step>.done), its
tasks only while the marker is missing, and the marker written last, once all of them
succeeded. A second run of the playbook therefore changes nothing and says so, and a run that
stopped half-way continues at the step that did not finish.

``--check`` shows what the first run would change. From the second step on, a task often needs
what an earlier one would have done (a package from a repository the play adds first, a unit
that a package brings), which check mode does not do; those tasks do not fail a check run
(``ignore_errors: "{{ ansible_check_mode }}"``), and a real run still fails on them. The apt
module is never judged in check mode: without python3-apt, which a minimal Debian lacks and
the module installs itself only in a real run, it cannot run in check mode at all. Pure.
"""

from __future__ import annotations

import re

from gpuwizard.core.plan import StepPlan
from gpuwizard.export.ansible_tasks import Context, Task, step_tasks, text
from gpuwizard.export.words import one_line

MARKER_DIR = "/var/lib/gpuwizard/ansible"
APT = "ansible.builtin.apt"
IN_CHECK_MODE = "{{ ansible_check_mode }}"


def marker_dir_task() -> Task:
    return {
        "name": "Keep a marker per finished step, so a second run skips it",
        "ansible.builtin.file": {"path": MARKER_DIR, "state": "directory", "mode": "0700"},
    }


def _title(step: StepPlan) -> str:
    title = one_line(step.title)
    return title[:1].upper() + title[1:]


def guarded_step_tasks(step: StepPlan, context: Context, first: bool) -> list[Task]:
    """The step's tasks behind its marker; ``first``: the first step that does anything."""
    tasks = step_tasks(step, context)
    if not tasks:
        return []
    register = "gpuwizard_done_" + re.sub(r"[^a-z0-9_]", "_", step.id.lower())
    marker = f"{MARKER_DIR}/{step.id}.done"
    when = f"not {register}.stat.exists"
    lenient = {"ignore_errors": IN_CHECK_MODE}
    check: Task = {
        "name": text(f"{_title(step)}: finished before?"),
        "ansible.builtin.stat": {"path": text(marker)},
        "register": register,
    }
    done: Task = {
        "name": text(f"{_title(step)}: finished"),
        "ansible.builtin.copy": {"dest": text(marker), "content": "done\n", "mode": "0600"},
        "when": when,
        "ignore_errors": IN_CHECK_MODE,
    }
    guarded = [
        {**task, "when": when, **(lenient if not first or APT in task else {})} for task in tasks
    ]
    return [check, *guarded, done]


MODULE_NEEDS = {
    "ansible.builtin.expect": (
        "python3-pexpect",
        "ansible.builtin.expect needs for the answered prompts",
    ),
    "ansible.builtin.pip": ("python3-packaging", "ansible.builtin.pip needs on the server"),
}
"""What a module needs on the server's Python (a minimal Debian has neither)."""


def module_needs(tasks: list[Task]) -> list[Task]:
    """A package task for each module the play uses that needs one (not judged in --check)."""
    used = {key for task in tasks for key in task}
    return [
        {
            "name": f"Install {package}, which {why}",
            "ansible.builtin.package": {"name": package, "state": "present"},
            "ignore_errors": IN_CHECK_MODE,
        }
        for module, (package, why) in MODULE_NEEDS.items()
        if module in used
    ]


def play_tasks(steps: tuple[StepPlan, ...], context: Context) -> list[Task]:
    out: list[Task] = []
    for step in steps:
        out += guarded_step_tasks(step, context, first=not out)
    return [marker_dir_task(), *out] if out else []
