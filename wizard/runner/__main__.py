"""The detached runner for the real machine: ``python -m gpuwizard.runner run --state DIR``.

Started by ``gpuwizard apply`` or the TUI (through systemd-run or setsid), as root. The
simulation starts ``python -m gpuwizard.sim.runner`` instead, which differs only in its Host.
``ahead`` is the process the runner starts to fetch later steps' downloads (runner/prefetch.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from gpuwizard.core.isolation import own_python
from gpuwizard.core.paths import STATE_DIR
from gpuwizard.machine.detect import local_host
from gpuwizard.runner.executor import Tools
from gpuwizard.runner.prefetch import run_ahead
from gpuwizard.runner.session import SessionOptions, add_answer_flags, answer_from, run_session


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m gpuwizard.runner")
    parser.add_argument("command", choices=("run", "ahead"))
    parser.add_argument("--state", type=Path, default=Path(STATE_DIR))
    parser.add_argument(
        "--yes", action="store_true", help="reboot without asking when a step needs it"
    )
    parser.add_argument("--owner", type=int, help="uid of the person who started the run")
    parser.add_argument(
        "--one-step", action="store_true", help="run one step that needs work, then stop"
    )
    parser.add_argument(
        "--check-only", action="store_true", help="verify what waited for a reboot; run nothing"
    )
    parser.add_argument(
        "--reboot-now", action="store_true", help="carry out the reboot the run waits for"
    )
    add_answer_flags(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    # Whatever umask started us (000 in some shells and units): what the steps create, and the
    # files they download before running them, are never group- or world-writable.
    os.umask(0o022)
    args = parse(argv)
    state = args.state.absolute()
    # Never the caller's folder: what another user planted there must not be found by a tool
    # this runner starts (a relative path, a Python started without isolation).
    os.chdir("/")
    host = local_host()
    if args.command == "ahead":
        return run_ahead(host, Tools(), state)
    options = SessionOptions(
        yes=args.yes,
        owner_uid=args.owner,
        one_step=args.one_step,
        check_only=args.check_only,
        reboot_now=args.reboot_now,
        answer=answer_from(args),
        ahead_command=tuple(own_python("-m", "gpuwizard.runner", "ahead", "--state", str(state))),
    )
    return run_session(lambda: host, Tools(), state, options)


if __name__ == "__main__":
    sys.exit(main())
