"""The ``gpuwizard`` command line's grammar: every subcommand, option and help text.

Errors are one line naming the fix (``UsageError``), never argparse's usage dump; the commands
themselves live in ``wizard/frontends/cli.py``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from gpuwizard import __version__
from gpuwizard.frontends.inputs import InputError, check_path

if TYPE_CHECKING:
    from gpuwizard.core.request import SetupRequest


class UsageError(Exception):
    """Bad input: printed as one line, exit 2."""


def text_arg(text: str) -> str:
    """A value without control characters (a pasted newline would break every line it is in)."""
    try:
        return check_path(text) if text else text
    except InputError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def path_arg(text: str) -> Path:
    try:
        return Path(check_path(text))
    except InputError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


class OneLineParser(argparse.ArgumentParser):
    """argparse, but errors are one line that names the fix, not a usage dump.

    A subcommand's options are added when that subcommand is parsed: every ``add_argument``
    costs argparse a help formatter, and ``gpuwizard detect --json`` should not pay for the
    options of the six commands it is not.
    """

    def __init__(
        self, *args: Any, arguments: Callable[[argparse.ArgumentParser], None] | None = None,
        **kwargs: Any,
    ) -> None:  # fmt: skip
        super().__init__(*args, **kwargs)
        self._arguments = arguments

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self._arguments is not None:
            add_arguments, self._arguments = self._arguments, None
            add_arguments(self)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


GROUPS = {
    "pins": "PyTorch and driver (default: gpuwizard picks what fits)",
    "environment": "the Python environment",
    "parts": "what else to set up",
}
"""Each group of wishes as ``--help`` heads it."""


def add_wishes(parser: argparse.ArgumentParser, engine_only: bool = False) -> None:
    """An option for each wish (``wizard/core/request.py``); ``engine_only``: only those the
    engine reads (``recommend`` answers what fits, not where it goes)."""
    from gpuwizard.core.request import WISHES

    groups: dict[str, argparse._ArgumentGroup] = {}
    for wish in WISHES:
        if engine_only and not wish.engine:
            continue
        if wish.group not in groups:
            groups[wish.group] = parser.add_argument_group(GROUPS[wish.group])
        group = groups[wish.group]
        if isinstance(_default(wish.name), bool):
            group.add_argument(wish.flag, action="store_true", help=wish.help)
        elif wish.values:
            group.add_argument(wish.flag, choices=wish.values, help=wish.help)
        else:  # its form (core.request) refuses control characters too, naming the wish
            group.add_argument(wish.flag, metavar=wish.metavar, help=wish.help)


def _default(name: str) -> object:
    from gpuwizard.core.request import SetupRequest

    return getattr(SetupRequest(), name)


def wishes_given(args: argparse.Namespace) -> SetupRequest:
    """The request the options ask for: each wish its flag gave, the others as by default."""
    from gpuwizard.core.request import WISHES, SetupRequest

    given: dict[str, object] = {}
    for wish in WISHES:
        value = getattr(args, wish.dest, None)
        if value is None or value is False:
            continue  # not given: the default
        given[wish.name] = not value if wish.turns_off else value
    return SetupRequest(**given)  # type: ignore[arg-type]


def detect_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print HostFacts and findings as JSON")
    parser.add_argument("--simulate", metavar="PROFILE", default=argparse.SUPPRESS)


def recommend_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_argument_group("host (default: this machine)")
    source.add_argument(
        "--facts", type=path_arg, metavar="FILE", help="facts JSON from `gpuwizard detect --json`"
    )
    source.add_argument(
        "--gpu", action="append", metavar="PCI_ID_OR_NAME", help="a GPU, repeat for several"
    )
    source.add_argument("--os", metavar="ID:VERSION", help="e.g. ubuntu:22.04, debian:12, rocky:9")
    source.add_argument(
        "--arch",
        choices=("x86_64", "aarch64"),
        help="default: aarch64 for Grace superchips (GH200, GB200, GB10), else x86_64",
    )
    source.add_argument("--driver", metavar="VERSION", help="the driver already installed")
    source.add_argument("--driver-flavor", choices=("open", "proprietary"))
    source.add_argument("--python", metavar="X.Y", help="the system python3 version")
    add_wishes(parser, engine_only=True)
    parser.add_argument(
        "--online",
        action="store_true",
        help="ask the package index (through pip) for newer releases",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--simulate", metavar="PROFILE", default=argparse.SUPPRESS)


def apply_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--yes",
        action="store_true",
        help="do not ask: apply the plan and reboot when a step needs it",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the plan and change nothing")
    parser.add_argument("--verbose", action="store_true", help="print every command's output")
    parser.add_argument(  # SUPPRESS: else its False would overwrite `gpuwizard --reset apply`'s
        "--reset", action="store_true", default=argparse.SUPPRESS,
        help="simulation only: start the simulated host over",
    )  # fmt: skip
    add_wishes(parser)
    parser.add_argument(
        "--config",
        type=path_arg,
        metavar="FILE",
        help="replay an answers.yaml (from `gpuwizard export`)",
    )
    parser.add_argument(
        "--accept-changes",
        action="store_true",
        help="with --config: plan even where the answers resolve to a different plan here",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="with --config: replay on a host unlike the one the answers were made on "
        "(also GPUWIZARD_FORCE=1, as deploy.sh)",
    )
    mok = parser.add_mutually_exclusive_group()
    mok.add_argument(
        "--mok-password-file",
        type=path_arg,
        metavar="FILE",
        help="the one-time MOK password (Secure Boot) from a file only you can read (chmod 600)",
    )
    mok.add_argument(
        "--mok-password-stdin",
        action="store_true",
        help="read the one-time MOK password from standard input (a pipe)",
    )
    parser.add_argument(
        "--rebooted",
        choices=("yes", "no"),
        help="whether the machine restarted since gpuwizard asked for a reboot, where neither "
        "its boot_id nor /proc/stat's boot time can tell",
    )
    parser.add_argument("--simulate", metavar="PROFILE", default=argparse.SUPPRESS)


def bench_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--python",
        type=path_arg,
        metavar="PATH",
        help="an interpreter with torch (default: the wizard's environment)",
    )
    parser.add_argument(
        "--modes",
        help="comma-separated, of: fp32 (strict), tf32, amp-fp16, amp-bf16 (default: all)",
    )
    parser.add_argument("--gpus", type=int, metavar="N", help="GPUs to use (default: all; 0: CPU)")
    parser.add_argument(
        "--batch-size",
        type=int,
        metavar="N",
        help="per GPU (default: sized to the GPU's memory, 128 images per 40 GiB, twice that "
        "with AMP, a power of two up to 1024, halved until a step fits; not a search for the "
        "largest batch)",
    )
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument(
        "--dataload",
        type=path_arg,
        metavar="DIR",
        help="where the data-loading check writes scratch files (default: /var/tmp)",
    )
    parser.add_argument("--no-dataload", action="store_true", help="skip the data-loading check")
    parser.add_argument(
        "--no-ddp", action="store_true", help="one GPU only: no DDP and all-reduce run"
    )
    parser.add_argument(
        "--json", action="store_true", help="print results.json at the end, nothing else on stdout"
    )
    parser.add_argument("--simulate", metavar="PROFILE", default=argparse.SUPPRESS)  # fmt: skip


def export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        metavar="NAMES",
        help="comma-separated, of: script, dockerfile, answers, ansible, cloud-init (default: all)",
    )
    parser.add_argument(
        "--config",
        type=path_arg,
        metavar="FILE",
        help="export the plan of an answers.yaml for this machine",
    )
    add_wishes(parser)
    parser.add_argument(
        "--accept-changes",
        action="store_true",
        help="with --config: even for another kind of server",
    )
    parser.add_argument(
        "-o", "--output", type=path_arg, metavar="DIR",
        help="write the files here (default: stdout for one file, else ./gpuwizard-export)",
    )  # fmt: skip
    parser.add_argument("--simulate", metavar="PROFILE", default=argparse.SUPPRESS)


def doctor_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.add_argument(
        "--bundle", nargs="?", const="", type=text_arg, metavar="PATH",
        help="also write a redacted support archive (tar.gz; default: ./gpuwizard-bundle-<time>.tar.gz)",
    )  # fmt: skip
    parser.add_argument(
        "--log", action="append", type=path_arg, metavar="FILE",
        help="also look for known errors in this log (a training run's output); repeatable",
    )  # fmt: skip
    parser.add_argument(
        "--env", type=text_arg, metavar="PATH",
        help="the Python environment with torch (default: the one gpuwizard set up)",
    )  # fmt: skip
    parser.add_argument("--simulate", metavar="PROFILE", default=argparse.SUPPRESS)


def capture_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", type=path_arg)
    parser.add_argument(
        "--description", type=text_arg, default="", help="one line saying what machine this is"
    )


SUBCOMMANDS: tuple[tuple[str, str, Callable[[argparse.ArgumentParser], None] | None], ...] = (
    ("detect", "show what this host has: GPUs, OS, driver, sizing", detect_arguments),
    ("recommend", "recommend driver, CUDA build and PyTorch, with reasons", recommend_arguments),
    ("apply", "install the recommended setup without the TUI", apply_arguments),
    (
        "bench",
        "run the ResNet-50 / DDP / NCCL benchmark and compare with published numbers",
        bench_arguments,
    ),
    (
        "export",
        "the chosen setup as deploy.sh, Dockerfile, answers.yaml, Ansible, cloud-init",
        export_arguments,
    ),
    (
        "doctor",
        "diagnose known problems: driver, CUDA versions, Secure Boot, GPU errors, NCCL",
        doctor_arguments,
    ),
    ("profiles", "list the built-in simulated hosts", None),
    ("capture-host", "record what detection reads, as a test fixture", capture_arguments),
)
"""Each subcommand: its name, its line in ``gpuwizard --help``, and what adds its options."""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="gpuwizard", description="Set up a fresh Linux GPU server for PyTorch."
    )
    parser.add_argument("--version", action="version", version=f"gpuwizard {__version__}")
    parser.add_argument(
        "--simulate",
        metavar="PROFILE",
        help="use a built-in simulated host (see `gpuwizard profiles`)",
    )
    parser.add_argument(
        "--reset", action="store_true", help="with --simulate: start the simulated host over"
    )
    sub = parser.add_subparsers(dest="command", parser_class=OneLineParser)
    for name, help_line, arguments in SUBCOMMANDS:
        sub.add_parser(name, help=help_line, arguments=arguments)
    return parser
