"""The runner for a simulated host: ``python -m gpuwizard.sim.runner run --profile P --home DIR``.

The same session as on a real machine; the Host is the sandbox and every tool is the shim. It is
started detached like the real one, so killing the TUI, the terminal or the runner itself can
be tested for real.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from gpuwizard.core.isolation import own_python
from gpuwizard.runner.executor import Tools
from gpuwizard.runner.prefetch import run_ahead
from gpuwizard.runner.session import SessionOptions, add_answer_flags, answer_from, run_session
from gpuwizard.sim.machine import sandbox_host
from gpuwizard.sim.sandbox import SimPlace, place_for, sim_env


def sim_tools(place: SimPlace) -> Tools:
    return Tools(shim=own_python("-m", "gpuwizard.sim.shim"), env=sim_env(place))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpuwizard.sim.runner")
    parser.add_argument("command", choices=("run", "ahead"))
    parser.add_argument("--profile", required=True)
    parser.add_argument("--home", type=Path)
    parser.add_argument("--yes", action="store_true")
    parser.add_argument("--one-step", action="store_true")
    parser.add_argument("--check-only", action="store_true")
    parser.add_argument("--reboot-now", action="store_true")
    add_answer_flags(parser)
    args = parser.parse_args(argv)
    os.umask(0o022)  # as the real runner: the simulated machine gets the same modes
    place = place_for(args.profile, args.home.absolute() if args.home else None)
    os.chdir("/")  # as the real runner: nothing is found in the caller's folder
    tools = sim_tools(place)
    if args.command == "ahead":
        return run_ahead(sandbox_host(place.sandbox), tools, place.state_dir)
    again = (
        "--profile",
        args.profile,
        *(("--home", str(args.home.absolute())) if args.home else ()),
    )
    return run_session(
        lambda: sandbox_host(place.sandbox),
        tools,
        place.state_dir,
        SessionOptions(
            yes=args.yes,
            one_step=args.one_step,
            check_only=args.check_only,
            reboot_now=args.reboot_now,
            answer=answer_from(args),
            ahead_command=tuple(own_python("-m", "gpuwizard.sim.runner", "ahead", *again)),
        ),
    )


if __name__ == "__main__":
    sys.exit(main())
