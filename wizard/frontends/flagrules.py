"""Flags that would do nothing where they are given: each is bad input (one line, exit 2).

A flag that is accepted and then ignored is a small lie: ``gpuwizard --reset detect`` reads as
if a simulated server had been started over. ``unused_flag`` looks at the parsed arguments
alone, before any command runs; it never reads the machine. (Whether this machine has a GPU,
which decides what the wizard's own ``--reset`` means, is checked where the wizard is chosen.)
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

READS_THE_RECORDING = {
    "detect": "reads the simulated host as recorded",
    "recommend": "reads the simulated host as recorded",
    "capture-host": "records the simulated host as recorded",
    "profiles": "only lists the simulated hosts",
}
"""Commands that never use a simulated host's sandbox (what ``--reset`` starts over), and why."""
DESCRIBING = ("facts", "gpu", "os", "arch", "driver", "driver_flavor", "python")
"""recommend's options that name the host themselves."""
DRY_RUN_IDLE = (
    ("yes", "--yes"), ("verbose", "--verbose"),
    ("mok_password_file", "--mok-password-file"), ("mok_password_stdin", "--mok-password-stdin"),
)  # fmt: skip
"""apply's options that matter only to a run that changes something."""


def reset_unused(args: argparse.Namespace) -> str | None:
    if not getattr(args, "reset", False):
        return None
    does = READS_THE_RECORDING.get(args.command)
    if does is not None:
        return f"--reset starts a simulated host over, but `gpuwizard {args.command}` {does}: drop --reset"
    if args.command is not None and args.simulate is None:
        return "--reset starts a simulated host over; it needs --simulate PROFILE"
    return None


def simulate_unused(args: argparse.Namespace) -> str | None:
    if args.simulate is None:
        return None
    if args.command == "profiles":
        return "--simulate: `gpuwizard profiles` lists every simulated host; drop --simulate"
    if args.command == "recommend" and any(getattr(args, name) for name in DESCRIBING):
        return "--simulate names the host to recommend for, and so do --facts/--gpu/--os: give one"
    return None


def dataload_unused(args: argparse.Namespace) -> str | None:
    if args.command == "bench" and args.no_dataload and args.dataload is not None:
        return "--no-dataload skips the data-loading check that --dataload DIR is for: give one"
    return None


def dry_run_unused(args: argparse.Namespace) -> str | None:
    if args.command != "apply" or not args.dry_run:
        return None
    given = [flag for name, flag in DRY_RUN_IDLE if getattr(args, name)]
    if given:
        return f"--dry-run changes nothing, so {given[0]} does nothing there: drop it"
    return None


RULES: tuple[Callable[[argparse.Namespace], str | None], ...] = (
    reset_unused,
    simulate_unused,
    dataload_unused,
    dry_run_unused,
)


def unused_flag(args: argparse.Namespace) -> str | None:
    """The one-line reason a given flag would do nothing in this command; None when all act."""
    for rule in RULES:
        message = rule(args)
        if message is not None:
            return message
    return None
