"""The runner's tools on a chroot machine: ``python -m tests.chroot.shim TOOL ARGS``.

The runner's ``Tools.shim`` points every command here (the machine's folder in
GPUWIZARD_CHROOT_MACHINE). A command runs inside the root, with the runner's environment and
on the runner's terminal, except these: ``gpuwizard-fetch`` runs outside (gpuwizard is not
installed in the root) and writes into it, ``gpuwizard-apt-fetch`` asks the root's apt and
downloads outside into the root's apt cache, ``uv`` runs offline against the stand-in wheels
where a tier offers them (tests/chroot/torch_standin.py), and ``reboot`` runs the root's stand-in, which makes
the new boot, and then ends the runner that asked for it, as a real reboot would.
"""

from __future__ import annotations

import os
import sys
import urllib.request
from pathlib import Path

from gpuwizard.machine.detect.platform import parse_boot_id
from gpuwizard.sim.reboot import kill_runner
from tests.chroot import torch_standin
from tests.chroot.host import resolve
from tests.chroot.machine import ChrootMachine

MACHINE_ENV = "GPUWIZARD_CHROOT_MACHINE"
PRIVATE = (MACHINE_ENV, "PYTHONPATH")
"""The shim's own variables, which never reach the root."""


def root_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in PRIVATE}


def fetch(machine: ChrootMachine, args: list[str]) -> int:
    from gpuwizard.runner.fetch import main as fetch_main

    destination = resolve(machine.root, args[1])
    destination.parent.mkdir(parents=True, exist_ok=True)
    return fetch_main([args[0], str(destination), *args[2:]])


def apt_fetch(machine: ChrootMachine, args: list[str]) -> int:
    """gpuwizard-apt-fetch: apt names the files inside the root, from its lists; they are
    downloaded outside (gpuwizard is not installed in the root) into the root's apt cache."""
    from gpuwizard.core.ops import APT_ENV
    from gpuwizard.runner import aptfetch

    parsed = aptfetch.parse(args)
    asked = machine.run(aptfetch.print_uris_argv(parsed.packages, parsed.recommends), env=APT_ENV)
    try:
        wanted = aptfetch.read_uris(asked.returncode, asked.stdout, asked.stderr)
    except aptfetch.AptFetchError as error:
        sys.stderr.write(f"gpuwizard-apt-fetch: {error}\n")
        return 1
    opener = urllib.request.build_opener(urllib.request.ProxyHandler())
    return 1 if aptfetch.fetch_all(wanted, machine.path(str(aptfetch.ARCHIVES)), opener) else 0


def reboot(machine: ChrootMachine, args: list[str]) -> int:
    ending = parse_boot_id(machine.boot_id())
    done = machine.run(["reboot", *args], env=root_env())
    sys.stdout.write(done.stdout + done.stderr)
    sys.stdout.flush()
    if done.returncode == 0 and machine.boot_id() != ending:
        kill_runner(machine.state_dir, ending)
    return done.returncode


def main(argv: list[str]) -> int:
    machine = ChrootMachine(Path(os.environ[MACHINE_ENV]))
    tool, args = argv[0], argv[1:]
    if tool == "gpuwizard-fetch":
        return fetch(machine, args)
    if tool == "gpuwizard-apt-fetch":
        return apt_fetch(machine, args)
    if Path(tool).name == "reboot":
        return reboot(machine, args)
    env = root_env()
    if Path(tool).name == "uv":
        offered = machine.path(torch_standin.FIND_LINKS).is_dir()  # PyTorch's index: stand-ins
        env = {**env, **(torch_standin.UV_ENV if offered else torch_standin.UV_TRUST)}
    command = machine.in_root(argv, env)
    os.execvp(command[0], command)
    return 127  # not reached: execvp replaces this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
