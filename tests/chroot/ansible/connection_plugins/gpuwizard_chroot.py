"""Ansible connection plugin for the heavy chroot tier: every task runs inside a chroot machine.

``ansible_host`` is the machine's folder. Each command goes through the machine's own wrapper
(``ChrootMachine.in_root``): a fresh mount and pid namespace, /proc and /dev/pts, the machine's
boot bound over /proc/sys/kernel/{random/boot_id,osrelease}, then chroot. So the playbook meets
the same root the runner and deploy.sh meet, and the reboot module sees the boot_id change when
the root's ``shutdown`` stand-in makes a new boot. Files are copied into and out of the root
with symlinks resolved inside it. Test-only: it needs PYTHONPATH to reach ``tests.chroot``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ansible.plugins.connection import ConnectionBase

from tests.chroot.host import resolve
from tests.chroot.machine import ChrootMachine

DOCUMENTATION = """
name: gpuwizard_chroot
short_description: run tasks inside a gpuwizard chroot machine (tests only)
description:
  - Runs commands in the machine's root through its namespace wrapper.
author: gpuwizard
options:
  remote_addr:
    description: the chroot machine's folder
    default: inventory_hostname
    vars:
      - name: ansible_host
"""


class Connection(ConnectionBase):
    transport = "gpuwizard_chroot"
    has_pipelining = True

    def _connect(self) -> Connection:
        self.machine = ChrootMachine(Path(self.get_option("remote_addr")))
        self._connected = True
        return self

    def exec_command(self, cmd, in_data=None, sudoable=False):  # type: ignore[no-untyped-def]
        super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        # uv's settings of the tier (offline, against the stand-in wheels: torch_standin.UV_ENV)
        # reach the module as the runner's shim and deploy.sh get them; the task's own
        # environment (the playbook's UV_ENV) comes after them in ``cmd``.
        uv = {key: value for key, value in os.environ.items() if key.startswith("UV_")}
        argv = self.machine.in_root(["/bin/sh", "-c", cmd], env=uv)
        process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        stdout, stderr = process.communicate(in_data)
        return process.returncode, stdout, stderr

    def put_file(self, in_path, out_path):  # type: ignore[no-untyped-def]
        super().put_file(in_path, out_path)
        target = resolve(self.machine.root, out_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(in_path, target)

    def fetch_file(self, in_path, out_path):  # type: ignore[no-untyped-def]
        super().fetch_file(in_path, out_path)
        shutil.copyfile(resolve(self.machine.root, in_path), out_path)

    def close(self) -> None:
        self._connected = False
