"""The Ansible export: the plan as one playbook for a group of servers, with the same pins.

The tasks come from ``wizard/export/ansible_tasks.py`` (one or more per action); this module
adds the play around them: the secrets' ``vars_prompt``, the header that says where the plan was
made and what was already done there, and a SafeDumper that writes every value a template could
touch as ``!unsafe``. Pure: nothing is read or run.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping

import yaml

from gpuwizard.core.plan import secrets_in
from gpuwizard.export.ansible_steps import MARKER_DIR, module_needs, play_tasks
from gpuwizard.export.ansible_tasks import Context, Unsafe, text, texts
from gpuwizard.export.hostcheck import FIELDS, IDENTITY_SH, identity
from gpuwizard.export.source import ExportSource
from gpuwizard.export.words import one_line

HOSTS = "{{ gpuwizard_hosts | default('gpu_servers') }}"
"""The inventory group ``gpu_servers``; ``-e gpuwizard_hosts=GROUP`` targets another."""


def secret_vars(source: ExportSource) -> dict[str, str]:
    """SecretRef name -> the play variable that holds what the person types."""
    names: dict[str, str] = {}
    for secret in secrets_in(source.plan):
        var = re.sub(r"[^a-z0-9_]", "_", secret.name.lower()).strip("_") or "secret"
        var = var if var[0].isalpha() else f"secret_{var}"
        while var in names.values():
            var += "_2"
        names[secret.name] = var
    return names


def prompt_tasks(source: ExportSource) -> list[dict[str, object]]:
    """vars_prompt entries for the plan's secrets."""
    variables = secret_vars(source)
    prompts: list[dict[str, object]] = [
        {
            "name": variables[s.name],
            "prompt": text(one_line(s.prompt)),
            "private": True,
            "confirm": True,
            "unsafe": True,
        }
        for s in secrets_in(source.plan)
    ]
    return prompts


def _comment(value: str, indent: str = "") -> list[str]:
    lines = textwrap.wrap(one_line(value), 96 - len(indent), break_on_hyphens=False) or [""]
    return [f"# {indent}{line}".rstrip() for line in lines]


def header(source: ExportSource, secrets: Mapping[str, str]) -> list[str]:
    done = [s.id for s in source.plan.steps if not s.actions]
    t = source.selection.torch
    lines = [
        f"# gpuwizard {one_line(source.version)}: Ansible playbook for PyTorch "
        f"{one_line(t.version)} ({one_line(t.variant)}), from the plan made on:",
        *_comment(source.machine, "  "),
        "# Plan summary:",
        *(line for s in source.plan.summary for line in _comment(s, "  ")),
        *_comment(
            "Every server in the group gets these steps with these pins. They were planned on the "
            "machine above: steps already done there are not here, and written files (such as "
            "daemon.json) carry that machine's content. Run gpuwizard itself on a server that differs."
        ),
    ]
    if done:
        lines += _comment(f"Already done on that machine: {', '.join(done)}.")
    if secrets:
        lines += _comment(
            f"Secrets ({', '.join(secrets.values())}) are asked once when the play starts "
            "(vars_prompt: hidden, typed twice, no default) and are never written here. A MOK "
            "enrollment needs a person at each server's console at the next boot (MokManager)."
        )
    lines += _comment(
        f"Each finished step leaves a marker in {MARKER_DIR} and is skipped on the next run, so "
        "a second run changes nothing; --check shows what a first run would change (a task that "
        "needs an earlier step's change is not judged in check mode)."
    )
    lines += _comment(
        "Run: ansible-playbook -i INVENTORY playbook.yml (the group gpu_servers; "
        "-e gpuwizard_hosts=GROUP for another)."
    )
    return lines


class PlaybookDumper(yaml.SafeDumper):
    """SafeDumper with indented sequences, ``|`` blocks for multi-line text and ``!unsafe``."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        del indentless  # yamllint's default style indents a sequence under its key
        super().increase_indent(flow, False)


def _style(data: str) -> str | None:
    # PyYAML writes NEL, LS and PS raw even in quoted scalars, where YAML reads them as line
    # breaks; only double quotes escape them. Multi-line text reads best as a | block.
    if any(c in data for c in "\x85\u2028\u2029"):
        return '"'
    return "|" if "\n" in data else None


def _represent_text(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=_style(data))


def _represent_unsafe(dumper: yaml.SafeDumper, data: Unsafe) -> yaml.ScalarNode:
    return dumper.represent_scalar("!unsafe", str(data), style=_style(data) or "'")


PlaybookDumper.add_representer(str, _represent_text)
PlaybookDumper.add_representer(Unsafe, _represent_unsafe)


FORCE_VAR = "gpuwizard_force"


def host_check_tasks() -> list[dict[str, object]]:
    """First of all, before any change: refuse a server unlike the machine the plan was made on
    (its GPUs, OS, CPU architecture, loaded driver branch), each difference named; ``-e
    gpuwizard_force=true`` runs it anyway. A server with a finished step is not checked again:
    it meets what the earlier run changed (the driver it installed)."""
    script = (
        f"if compgen -G '{MARKER_DIR}/*.done' >/dev/null; then exit 0; fi\n"
        f"gw_root=''\n{IDENTITY_SH}"
    )
    read: dict[str, object] = {
        "name": "Read what the plan was made for, on this server: GPUs, OS, CPU, driver branch",
        "ansible.builtin.command": {"argv": ["bash", "-c", text(script), "gpuwizard-host"]},
        "register": "gpuwizard_host",
        "changed_when": False,
        "check_mode": False,
    }
    check: dict[str, object] = {
        "name": "Refuse a server unlike the one the plan was made for (-e gpuwizard_force=true runs it)",
        "ansible.builtin.assert": {
            "that": "item.1 == item.0.value",
            "fail_msg": (
                "{{ item.0.label }}: made for {{ item.0.value }}, this host has {{ item.1 }}. "
                "Nothing was changed. Run gpuwizard on it for a plan of its own, or pass "
                f"-e {FORCE_VAR}=true to run this one anyway"
            ),
            "quiet": True,
        },
        "loop": "{{ gpuwizard_made_for | zip(gpuwizard_host.stdout_lines) | list }}",
        "loop_control": {"label": "{{ item.0.label }}"},
        "when": f"not ({FORCE_VAR} | default(false) | bool) and item.0.value | length > 0",
    }
    return [read, check]


def made_for(source: ExportSource) -> list[dict[str, object]]:
    made = identity(source.facts)
    values = {name: getattr(made, name) for name, _ in FIELDS}
    if source.selection.wsl:
        values["gpus"] = ""  # the Windows driver shows WSL's GPUs; the PCI bus does not
    return [{"label": label, "value": text(values[name])} for name, label in FIELDS]


def render_ansible(source: ExportSource) -> str:
    """The playbook for this plan.

    Raises:
        ExportError: an action with no Ansible form (an unknown gpuwizard-fetch option).
    """
    secrets = secret_vars(source)
    prompts = prompt_tasks(source)
    context = Context(source, secrets)
    steps = play_tasks(source.plan.steps, context)
    tasks = host_check_tasks() + module_needs(steps) + steps
    play: dict[str, object] = {
        "name": text(one_line(f"Set up GPU servers for PyTorch as planned on {source.machine}")),
        "hosts": HOSTS,
        "become": True,
        "gather_facts": False,
    }
    if prompts:
        play["vars_prompt"] = prompts
    play["vars"] = {
        "gpuwizard_version": text(source.version),
        "gpuwizard_source_machine": text(source.machine),
        "gpuwizard_plan_summary": texts(source.plan.summary),
        "gpuwizard_made_for": made_for(source),
    }
    play["tasks"] = tasks
    body = yaml.dump([play], Dumper=PlaybookDumper, sort_keys=False, allow_unicode=True, width=100)
    return "\n".join([*header(source, secrets), "---", body.rstrip("\n")]) + "\n"
