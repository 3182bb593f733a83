"""The ``gpuwizard`` command: parse arguments, build the Host, run one subcommand.

Every bad input ends in one line on stderr and exit 2, never a traceback. Heavy imports (the
TUI, pynvml) happen inside the subcommand that needs them, so ``gpuwizard detect --json`` stays
fast and never loads Textual. Everything printed passes through gpuwizard's one sanitiser
(``wizard/core/safetext.py``): facts, logs and answers files reach the terminal without escapes.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import textwrap
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, cast

from gpuwizard.core.safetext import CleanStream, json_text
from gpuwizard.frontends.cliargs import UsageError, build_parser
from gpuwizard.frontends.flagrules import unused_flag
from gpuwizard.frontends.inputs import MIB, InputError, read_text

if TYPE_CHECKING:
    from gpuwizard.core.facts import HostFacts
    from gpuwizard.core.request import SetupRequest
    from gpuwizard.export.answers import Answers
    from gpuwizard.frontends.secretinput import Secret
    from gpuwizard.machine import Machine
    from gpuwizard.machine.host import Host
    from gpuwizard.recommend.table import CompatTable
    from gpuwizard.recommend.target import Target
    from gpuwizard.runner.control import Backend

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_UNSUPPORTED = 3
EXIT_REBOOT = 10

SIMULATION_OFFER = (
    "No NVIDIA GPU here: to try gpuwizard anyway, add --simulate PROFILE "
    "(e.g. --simulate h100x8-ubuntu2204-fresh; `gpuwizard profiles` lists them)."
)

NO_SYSFS_OFFER = (
    "/sys could not be read here, so whether this machine has an NVIDIA GPU is unknown: run "
    "gpuwizard where /sys is mounted (the machine itself, not a chroot or container), or try a "
    "simulated server with --simulate PROFILE (`gpuwizard profiles` lists them)."
)


def simulated_profile(args: argparse.Namespace) -> str | None:
    """The built-in profile ``--simulate`` names, checked; None for this machine.

    Checked by name, never by truth: ``--simulate ""`` is a mistake to report, not a request
    for the real machine.
    """
    name: str | None = args.simulate
    if name is None:
        return None
    from gpuwizard.sim.profiles import UnknownProfile, find_profile

    try:
        find_profile(name)
    except UnknownProfile as error:
        raise UsageError(f"--simulate: {error}") from None
    return name


def host_for(args: argparse.Namespace) -> Host:
    """The simulated profile when one is named, else the real machine."""
    from gpuwizard.machine.detect import local_host

    profile = simulated_profile(args)
    if profile is not None:
        from gpuwizard.sim.profiles import profile_host

        return profile_host(profile)
    return local_host()


def detect_facts(args: argparse.Namespace) -> HostFacts:
    from gpuwizard.machine.detect import detect_host

    return detect_host(host_for(args))


def cmd_detect(args: argparse.Namespace) -> int:
    from gpuwizard.core.codec import to_jsonable
    from gpuwizard.frontends.report import host_lines
    from gpuwizard.recommend.os_support import load_os_support
    from gpuwizard.recommend.sizing import assess

    facts = detect_facts(args)
    findings = assess(facts, load_os_support())
    if args.json:
        envelope = {
            "schema": facts.schema,
            "facts": to_jsonable(facts),
            "findings": to_jsonable(findings),
        }
        print(json_text(envelope))
    else:
        print("\n".join(host_lines(facts, findings)))
        if not facts.hardware.gpus and args.simulate is None:
            offer = SIMULATION_OFFER if facts.hardware.pci_visible else NO_SYSFS_OFFER
            print(offer, file=sys.stderr)
    return EXIT_OK


def cmd_recommend(args: argparse.Namespace) -> int:
    # The solver is loaded only here: `detect --json` stays fast without it.
    from gpuwizard.frontends.report import existing_lines, recommendation_lines
    from gpuwizard.recommend.engine import recommend
    from gpuwizard.recommend.existing import use_env_problem
    from gpuwizard.recommend.result import Refusal, to_json_contract
    from gpuwizard.recommend.table import load_table
    from gpuwizard.recommend.target import BadInput

    table = load_table()
    try:
        target, facts = recommend_target(args, table)
        this_machine = facts is not None and not args.facts
        request = requested(args)
        if request.keep_driver and target.driver is None:
            raise BadInput("--keep-driver: no NVIDIA driver is installed to keep")
        if request.use_env and facts is None:
            raise BadInput("--use-env: a described host has no environments; drop --gpu/--os")
        if facts and (problem := use_env_problem(facts, table, request)):
            raise BadInput(problem)
        result = recommend(table, target, request)
    except BadInput as error:
        raise UsageError(str(error)) from None
    online = online_report(table) if args.online else None
    if args.json:
        contract = to_json_contract(result)
        if online is not None:
            contract["online"] = online
        print(json_text(contract))
    else:
        print("\n".join(recommendation_lines(result)))
        if facts is not None and not isinstance(result, Refusal):
            print("\n".join(existing_lines(facts, table, request.use_env)))
        if online is not None:
            print("\nOnline: " + str(online["summary"]))
    if isinstance(result, Refusal) and not result.gpus and this_machine and args.simulate is None:
        print(SIMULATION_OFFER, file=sys.stderr)
    return EXIT_UNSUPPORTED if isinstance(result, Refusal) else EXIT_OK


def recommend_target(
    args: argparse.Namespace, table: CompatTable
) -> tuple[Target, HostFacts | None]:
    """The host to recommend for, and its facts when it is a machine (this one, the simulated
    one, or --facts) rather than a description (--gpu, --os)."""
    from gpuwizard.recommend.target import target_from_facts, target_from_spec

    described = args.gpu or args.os or args.arch or args.driver or args.driver_flavor or args.python
    if args.facts and described:
        raise UsageError(
            "--facts describes the whole host; drop --gpu/--os/--arch/--driver/--python"
        )
    if args.facts:
        facts = read_facts(args.facts)
        return target_from_facts(facts, table), facts
    if described:
        if not args.gpu or not args.os:
            raise UsageError(
                "describe a host with both --gpu and --os (e.g. --gpu H100 --os ubuntu:22.04)"
            )
        spec = (args.gpu, args.os, args.arch, args.driver, args.driver_flavor, args.python)
        return target_from_spec(table, *spec), None
    facts = detect_facts(args)
    return target_from_facts(facts, table), facts


FACTS_MAX_BYTES = 16 * MIB
"""`detect --json` of an 8-GPU server is about 40 KiB; anything near this is not a facts file."""


def read_facts(path: Path) -> HostFacts:
    from gpuwizard.core.codec import CodecError
    from gpuwizard.core.facts import HostFacts

    try:
        text = read_text(path, FACTS_MAX_BYTES, "a facts file")
        return HostFacts.from_json(text)
    except (InputError, CodecError) as error:
        raise UsageError(f"--facts {path}: {error}") from None


def online_report(table: CompatTable) -> dict[str, object]:
    from gpuwizard.core.version import Version
    from gpuwizard.machine.detect.online import query_index
    from gpuwizard.machine.host import SubprocessRunner

    answer = query_index(SubprocessRunner())
    newest = max(Version.parse(r.version) for r in table.torch_releases)
    newer = [v for v in answer.versions if Version.parse(v) > newest]
    if answer.error:
        summary = f"could not ask the package index: {answer.error}"
    elif newer:
        summary = (
            f"the index offers torch {', '.join(newer)}, newer than gpuwizard's table "
            f"({table.reviewed}); not recommended until its builds are confirmed"
        )
    else:
        summary = (
            f"the index offers nothing newer than torch {newest} (table reviewed {table.reviewed})"
        )
    return {
        "index_versions": list(answer.versions[:10]),
        "newer_than_table": newer,
        "error": answer.error,
        "summary": summary,
    }


def backend_for(args: argparse.Namespace) -> Backend:
    profile = simulated_profile(args)
    if profile is not None:
        from gpuwizard.sim.backend import sim_backend

        return sim_backend(profile, reset=getattr(args, "reset", False))
    if getattr(args, "reset", False):
        raise UsageError("--reset starts a simulated host over; it needs --simulate PROFILE")
    return real_backend()


def check_state_readable(state: Path) -> None:
    """A setup's state another user made here (root's, 0700) cannot be read: say so in one line,
    before a plan is made without the runs it records."""
    import os

    if state.exists() and not os.access(state, os.R_OK | os.X_OK):
        raise UsageError(
            f"cannot read gpuwizard's state in {state} (permission denied; it is root's): "
            "use sudo, or try --simulate PROFILE"
        )


REBOOT_COMMAND = ("systemctl", "reboot")


def reboot_this_machine(run: Callable[[list[str]], object] | None = None) -> None:
    """Reboot the real machine (the person confirmed it); ``run`` carries out the command."""
    import subprocess

    (run or partial(subprocess.run, check=False))(list(REBOOT_COMMAND))


def require_root(message: str) -> None:
    import os

    if os.geteuid() != 0:
        raise UsageError(f"{message}, or try --simulate PROFILE (see `gpuwizard profiles`)")


def real_backend(state_dir: Path | None = None) -> Backend:
    """This machine as the runner drives it. Starting a runner needs root; building this does not."""
    import os

    from gpuwizard.core.isolation import own_python
    from gpuwizard.core.paths import STATE_DIR
    from gpuwizard.machine.detect import local_host
    from gpuwizard.runner.control import Backend

    state = state_dir or Path(STATE_DIR)
    owner = os.environ.get("SUDO_UID")
    runner = (
        *own_python("-m", "gpuwizard.runner"),
        *("run", "--state", str(state)),
        *(("--owner", owner) if owner else ()),
    )
    return Backend(
        name=this_machines_name(),
        host=local_host,
        state_dir=state,
        runner=runner,
        env={},
        reboot=reboot_this_machine,
    )


def this_machines_name() -> str:
    """The host name, for titles and messages ("Plan for gpu-node-07:"); its clean form only."""
    import socket

    from gpuwizard.core.safetext import one_line

    return one_line(socket.gethostname())[:64] or "this machine"


def cmd_apply(args: argparse.Namespace) -> int:
    import os

    from gpuwizard.frontends.apply import ApplyError, ApplyRequest, apply

    setup = requested(args)
    answers = None
    if args.config is not None:
        if setup.pinned:
            raise UsageError("--config gives every choice; drop the other choice and option flags")
        answers = read_answers(args.config)
        setup = answers.request
    elif args.accept_changes or args.force:
        flag = "--accept-changes" if args.accept_changes else "--force"
        raise UsageError(f"{flag} goes with --config answers.yaml")
    rebooted = None if args.rebooted is None else args.rebooted == "yes"
    request = ApplyRequest(
        setup, yes=args.yes, dry_run=args.dry_run, verbose=args.verbose, rebooted=rebooted,
        answers=answers, accept_changes=args.accept_changes, secrets=given_secrets(args),
        force=args.force or os.environ.get("GPUWIZARD_FORCE") == "1",
    )  # fmt: skip
    if simulated_profile(args) is None and not args.dry_run:
        require_root("installing changes the system: run it as root (sudo gpuwizard apply ...)")
    backend = backend_for(args)
    if not backend.simulated:
        check_state_readable(backend.state_dir)
    try:
        return apply(backend, request, out=sys.stdout)  # the cleaned stream, as it is now
    except ApplyError as error:
        print(f"gpuwizard: {error}", file=sys.stderr)
        if error.no_gpu and not backend.simulated:
            print(SIMULATION_OFFER, file=sys.stderr)
        return error.code


def given_secrets(args: argparse.Namespace) -> dict[str, Secret]:
    """The MOK password from --mok-password-file or --mok-password-stdin, checked on the way in."""
    from gpuwizard.frontends.secretinput import (
        SecretInputError,
        read_password_file,
        read_password_stdin,
    )
    from gpuwizard.steps.enroll_mok import MOK_PASSWORD

    try:
        if args.mok_password_file is not None:
            return {MOK_PASSWORD.name: read_password_file(args.mok_password_file)}
        if args.mok_password_stdin:
            stdin = sys.stdin
            return {MOK_PASSWORD.name: read_password_stdin(stdin.buffer, stdin.isatty())}
    except SecretInputError as error:
        raise UsageError(str(error)) from None
    return {}


def requested(args: argparse.Namespace) -> SetupRequest:
    """Every wish the command line gives (recommend, apply, export), checked: a value of the
    wrong form, or one gpuwizard never offers, is one line, exit 2."""
    from gpuwizard.frontends.cliargs import wishes_given
    from gpuwizard.recommend.release_pins import check_request
    from gpuwizard.recommend.table import load_table
    from gpuwizard.recommend.target import BadInput

    request = wishes_given(args)
    try:
        check_request(load_table(), request)
    except BadInput as error:
        raise UsageError(str(error)) from None
    return request


def read_answers(path: Path) -> Answers:
    from gpuwizard.export.answers import MAX_BYTES, AnswersError, load_answers

    try:
        return load_answers(read_text(path, MAX_BYTES, "an answers file"))
    except (InputError, AnswersError) as error:
        raise UsageError(f"--config {path}: {error}") from None


def machine_for(args: argparse.Namespace) -> Machine:
    """The simulated profile when one is named, else this machine (looking needs no root)."""
    return backend_for(args)


def cmd_bench(args: argparse.Namespace) -> int:
    from gpuwizard.frontends.benchcmd import BenchUsageError, run_bench

    try:
        return run_bench(args, machine_for(args))
    except BenchUsageError as error:
        raise UsageError(str(error)) from None


def cmd_export(args: argparse.Namespace) -> int:
    from gpuwizard.frontends.exportcmd import ExportUsageError, run_export

    if args.accept_changes and args.config is None:
        raise UsageError("--accept-changes goes with --config answers.yaml")
    request = requested(args)
    if request.pinned and args.config is not None:
        raise UsageError("--config gives every choice; drop the other choice flags")
    answers = read_answers(args.config) if args.config is not None else None
    machine = machine_for(args)
    if not machine.simulated:  # the setup it exports is the one the state records
        check_state_readable(machine.state_dir)
    try:
        return run_export(args, machine, answers, request)
    except ExportUsageError as error:
        if error.code == EXIT_BAD_INPUT:
            raise UsageError(str(error)) from None
        print(f"gpuwizard: {error}", file=sys.stderr)
        if error.no_gpu and args.simulate is None:
            print(SIMULATION_OFFER, file=sys.stderr)
        return error.code


def cmd_doctor(args: argparse.Namespace) -> int:
    from gpuwizard.frontends.doctorcmd import DoctorUsageError, run_doctor

    try:
        return run_doctor(args, machine_for(args))
    except DoctorUsageError as error:
        raise UsageError(str(error)) from None


def cmd_profiles(args: argparse.Namespace) -> int:
    del args
    from gpuwizard.sim.profiles import list_profiles

    profiles = list_profiles()
    width = max(len(p.name) for p in profiles)
    for profile in profiles:
        print(f"{profile.name:<{width}}  {profile.description}")
    return EXIT_OK


def cmd_capture(args: argparse.Namespace) -> int:
    from gpuwizard.core.machine_words import counted
    from gpuwizard.machine.detect.capture import capture_host

    directory: Path = args.directory
    try:
        facts = capture_host(host_for(args), directory, args.description)
    except FileExistsError:
        raise UsageError(
            f"capture-host: {directory} exists; give a new folder (it is created private, 0700)"
        ) from None
    except OSError as error:
        raise UsageError(f"capture-host: {directory}: {error.strerror or error}") from None
    where = facts.os.pretty_name if facts.os else "an unknown OS"
    print(f"recorded {counted(len(facts.hardware.gpus), 'GPU')} on {where} into {directory}")
    return EXIT_OK


def cmd_default(args: argparse.Namespace) -> int:
    """No subcommand: the wizard. Without an NVIDIA GPU here it simulates a built-in server."""
    make_backend = tui_backend(args)
    from gpuwizard.frontends.app import run_tui  # Textual is loaded only for the TUI

    message, code = run_tui(make_backend)
    if message:
        print(message, file=sys.stderr if code not in (EXIT_OK, EXIT_REBOOT) else sys.stdout)
    return code


def tui_backend(
    args: argparse.Namespace, has_gpu: Callable[[], bool] | None = None
) -> Callable[[], Backend]:
    """How to make the machine the wizard drives: the named profile; else this machine when it
    has an NVIDIA GPU (as root); else the default simulated server, said before the TUI starts
    (its title then says SIMULATION and "no GPU here"). Bad input is refused now; the backend
    itself (runner, journal, sandbox: ~100 ms of imports) is made after the TUI's first frame."""
    if args.simulate is None and (has_gpu or has_nvidia_gpu)():
        if args.reset:
            raise UsageError(
                "--reset starts a simulated host over; with an NVIDIA GPU here the wizard drives "
                "this machine: drop --reset, or add --simulate PROFILE"
            )
        require_root(
            "the wizard installs drivers and changes the system: run it as root (sudo gpuwizard)"
        )
        return real_backend
    if args.simulate is None:
        from gpuwizard.sim.profiles import DEFAULT_PROFILE

        print(no_gpu_line(DEFAULT_PROFILE, shutil.get_terminal_size().columns))
        args.simulate = DEFAULT_PROFILE
        return lambda: dataclasses.replace(
            backend_for(args), name=f"simulated {DEFAULT_PROFILE} ({NO_GPU_NOTE})"
        )
    simulated_profile(args)
    return partial(backend_for, args)


def no_gpu_line(profile: str, columns: int) -> str:
    """The line said before the TUI (it stays on the terminal after it): within the terminal's
    width, broken at a word where it is narrower than the line."""
    line = f"No NVIDIA GPU: simulating {profile} (see `gpuwizard profiles`)."
    return textwrap.fill(line, width=max(columns, 20), break_long_words=False)


NO_GPU_NOTE = "no GPU here"
"""In the title beside the profile: ~60 characters fit at 80 columns ("Benchmark — SIMULATION:
h100x8-ubuntu2204-fresh (no GPU here)" is 61)."""


def has_nvidia_gpu() -> bool:
    from gpuwizard.machine.detect import detect_host, local_host

    return bool(detect_host(local_host()).hardware.gpus)


COMMANDS = {
    "detect": cmd_detect,
    "recommend": cmd_recommend,
    "apply": cmd_apply,
    "bench": cmd_bench,
    "export": cmd_export,
    "doctor": cmd_doctor,
    "profiles": cmd_profiles,
    "capture-host": cmd_capture,
    None: cmd_default,
}


def main(argv: Sequence[str] | None = None) -> int:
    # Facts, logs, answers files and paths can carry terminal escapes: whatever a command prints
    # goes through the sanitiser (the TUI draws on the real stderr; Textual writes there itself).
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = cast(TextIO, CleanStream(out)), cast(TextIO, CleanStream(err))
    try:
        return run_command(argv)
    finally:
        sys.stdout, sys.stderr = out, err


def run_command(argv: Sequence[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
        unused = unused_flag(args)
        if unused is not None:
            raise UsageError(unused)
        return COMMANDS[args.command](args)
    except UsageError as error:
        print(f"gpuwizard: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("gpuwizard: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
