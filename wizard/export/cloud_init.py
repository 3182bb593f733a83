"""cloud-init user-data that sets up a new instance the way the plan says, through deploy.sh.

How it works with cloud-init's semantics:

- ``write_files`` (once per instance, in the init stage, before any command) puts deploy.sh,
  exactly as ``render_bash`` makes it, at /var/lib/gpuwizard/deploy.sh, root-only (0700).
- ``runcmd`` also runs once per instance, inside cloud-final.service, and never again after a
  reboot. deploy.sh must not run there in the foreground: its wait-cloud-init step
  (``cloud-init status --wait``) would wait for cloud-final, which waits for runcmd. So runcmd
  only hands it to systemd (``systemd-run --no-block``, a transient unit) and returns. deploy.sh
  runs with ``--reboot --install-resume-unit``: it enables gpuwizard-deploy.service (Type=simple,
  wanted by multi-user.target), reboots wherever the plan needs it, is started again by that unit
  after each boot, and removes the unit once every step is done.
- Not ``bootcmd`` (every boot, but before the network that apt and pip need) nor a
  ``scripts/per-boot`` script (run inside cloud-final again: the same wait on itself).
- No secrets: nobody is at an unattended instance's console to type a MOK password, so a plan
  that needs one is refused.

Output goes to the journal (``journalctl -u gpuwizard-deploy-first-boot -u gpuwizard-deploy``).
The script is kept as a YAML literal block where YAML allows one, so it stays readable; EC2 caps
user-data at 16 KiB, so there gzip the file first (cloud-init reads gzip-compressed user-data).
Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

import yaml

from gpuwizard.core.plan import secrets_in
from gpuwizard.export.bash import render_bash
from gpuwizard.export.bash_runtime import INSTALLED_SCRIPT, UNIT
from gpuwizard.export.source import ExportError, ExportSource
from gpuwizard.export.words import one_line

FIRST_BOOT_UNIT = "gpuwizard-deploy-first-boot"


def render_cloud_init(source: ExportSource) -> str:
    """The plan as ``#cloud-config`` user-data for a new instance of the same kind.

    Raises:
        ExportError: the plan needs a secret, or deploy.sh cannot be made (see render_bash).
    """
    secrets = secrets_in(source.plan)
    if secrets:
        names = ", ".join(secret.name for secret in secrets)
        raise ExportError(
            f"the plan needs a secret ({names}) that nobody can type at an unattended instance's "
            "console; choose signed prebuilt driver modules or turn Secure Boot off, then export again"
        )
    script = render_bash(source)
    data = {
        "write_files": [
            {"path": INSTALLED_SCRIPT, "owner": "root:root", "permissions": "0700", "content": script}
        ],
        "runcmd": [
            _Flow([
                "systemd-run", f"--unit={FIRST_BOOT_UNIT}", "--no-block",
                "/bin/bash", INSTALLED_SCRIPT, "--reboot", "--install-resume-unit",
            ])
        ],
    }  # fmt: skip
    return "\n".join(["#cloud-config", *_header(source), _dump(data)])


def _header(source: ExportSource) -> list[str]:
    return [
        f"# gpuwizard {one_line(source.version)}: set up a new instance like {one_line(source.machine)}",
        *(f"#   {one_line(line)}" for line in source.plan.summary),
        f"# {INSTALLED_SCRIPT} runs detached ({FIRST_BOOT_UNIT}), reboots where the",
        f"# plan needs it and continues after each boot through {UNIT},",
        "# which removes itself when every step is done.",
        f"# Follow it with: journalctl -f -u {FIRST_BOOT_UNIT} -u {UNIT}",
    ]


class _Flow(list[str]):
    """A command, written on one line: [systemd-run, ...]."""


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks (PyYAML falls back to quoting where YAML forbids one)."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> Any:
    # PyYAML would put NEL (U+0085) in a literal block, where loading turns it into "\n".
    style = "|" if "\n" in value and "\x85" not in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _represent_flow(dumper: yaml.SafeDumper, value: _Flow) -> Any:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=True)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(_Flow, _represent_flow)


def _dump(data: dict[str, Any]) -> str:
    text: str = yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=1000,
        default_flow_style=False,
    )
    return text
