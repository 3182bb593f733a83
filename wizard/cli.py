"""The ``gpuwizard`` command: parse arguments, build the Host, run one subcommand.

Every bad input ends in one line on stderr and exit 2, never a traceback. Heavy imports (the
TUI, pynvml) happen inside the subcommand that needs them, so ``gpuwizard detect --json`` stays
fast and never loads Textual.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpuwizard.cliargs import UsageError, build_parser

if TYPE_CHECKING:
    from gpuwizard.export.answers import Answers
    from gpuwizard.facts import HostFacts
    from gpuwizard.host import Host
    from gpuwizard.machine import Machine
    from gpuwizard.recommend.table import CompatTable
    from gpuwizard.recommend.target import Target
    from gpuwizard.runner.control import Backend

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_UNSUPPORTED = 3


def host_for(args: argparse.Namespace) -> Host:
    """The simulated profile when one is named, else the real machine."""
    from gpuwizard.detect import local_host

    if args.simulate:
        from gpuwizard.sim.profiles import UnknownProfile, profile_host

        try:
            return profile_host(args.simulate)
        except UnknownProfile as error:
            raise UsageError(f"--simulate: {error}") from None
    return local_host()


def detect_facts(args: argparse.Namespace) -> HostFacts:
    from gpuwizard.detect import detect_host

    return detect_host(host_for(args))


def cmd_detect(args: argparse.Namespace) -> int:
    from gpuwizard.codec import to_jsonable
    from gpuwizard.recommend.sizing import assess
    from gpuwizard.recommend.table import load_table
    from gpuwizard.report import host_lines

    facts = detect_facts(args)
    findings = assess(facts, load_table())
    if args.json:
        envelope = {
            "schema": facts.schema,
            "facts": to_jsonable(facts),
            "findings": to_jsonable(findings),
        }
        print(json.dumps(envelope, indent=2, ensure_ascii=False))
    else:
        print("\n".join(host_lines(facts, findings)))
    return EXIT_OK


def cmd_recommend(args: argparse.Namespace) -> int:
    # The solver is loaded only here: `detect --json` stays fast without it.
    from gpuwizard.recommend.engine import recommend
    from gpuwizard.recommend.result import Choices, Refusal, to_json_contract
    from gpuwizard.recommend.table import load_table
    from gpuwizard.recommend.target import BadInput
    from gpuwizard.report import recommendation_lines

    table = load_table()
    try:
        target = recommend_target(args, table)
        choices = Choices(
            torch=args.torch,
            variant=check_variant(args.variant),
            keep_driver=args.keep_driver,
            needs_nvcc=args.needs_nvcc,
        )
        if choices.keep_driver and target.driver is None:
            raise BadInput("--keep-driver: no NVIDIA driver is installed to keep")
        result = recommend(table, target, choices)
    except BadInput as error:
        raise UsageError(str(error)) from None
    online = online_report(table) if args.online else None
    if args.json:
        contract = to_json_contract(result)
        if online is not None:
            contract["online"] = online
        print(json.dumps(contract, indent=2, ensure_ascii=False))
    else:
        print("\n".join(recommendation_lines(result)))
        if online is not None:
            print("\nOnline: " + str(online["summary"]))
    return EXIT_UNSUPPORTED if isinstance(result, Refusal) else EXIT_OK


def check_variant(variant: str | None) -> str | None:
    if variant is not None and not re.fullmatch(r"cu\d{3}", variant):
        raise UsageError(f"--variant {variant!r}: expected a CUDA build name like cu126 or cu130")
    return variant


def recommend_target(args: argparse.Namespace, table: CompatTable) -> Target:
    from gpuwizard.recommend.target import target_from_facts, target_from_spec

    described = args.gpu or args.os or args.driver or args.driver_flavor or args.python
    if args.facts and described:
        raise UsageError("--facts describes the whole host; drop --gpu/--os/--driver/--python")
    if args.facts:
        return target_from_facts(read_facts(args.facts), table)
    if described:
        if not args.gpu or not args.os:
            raise UsageError(
                "describe a host with both --gpu and --os (e.g. --gpu H100 --os ubuntu:22.04)"
            )
        return target_from_spec(
            table, args.gpu, args.os, args.arch, args.driver, args.driver_flavor, args.python
        )
    return target_from_facts(detect_facts(args), table)


def read_facts(path: Path) -> HostFacts:
    from gpuwizard.codec import CodecError
    from gpuwizard.facts import HostFacts

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"--facts {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--facts {path}: not a UTF-8 text file") from None
    try:
        return HostFacts.from_json(text)
    except CodecError as error:
        raise UsageError(f"--facts {path}: {error}") from None


def online_report(table: CompatTable) -> dict[str, object]:
    from gpuwizard.detect.online import query_index
    from gpuwizard.host import SubprocessRunner
    from gpuwizard.version import Version

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
    if args.simulate:
        from gpuwizard.sim.backend import sim_backend
        from gpuwizard.sim.profiles import UnknownProfile, find_profile

        try:
            find_profile(args.simulate)
        except UnknownProfile as error:
            raise UsageError(f"--simulate: {error}") from None
        return sim_backend(args.simulate, reset=getattr(args, "reset", False))
    if getattr(args, "reset", False):
        raise UsageError("--reset starts a simulated host over; it needs --simulate PROFILE")
    return real_backend()


def reboot_this_machine() -> None:
    import subprocess

    subprocess.run(["systemctl", "reboot"], check=False)


def real_backend() -> Backend:
    import os

    from gpuwizard.detect import local_host
    from gpuwizard.paths import STATE_DIR

    if os.geteuid() != 0:
        raise UsageError(
            "installing changes the system: run it as root (sudo gpuwizard apply ...), or try --simulate PROFILE"
        )
    owner = os.environ.get("SUDO_UID")
    runner = (
        sys.executable,
        "-m",
        "gpuwizard.runner",
        "run",
        "--state",
        STATE_DIR,
        *(("--owner", owner) if owner else ()),
    )
    return Backend(
        name="this machine",
        host=local_host,
        state_dir=Path(STATE_DIR),
        runner=runner,
        env={},
        reboot=reboot_this_machine,
    )


def cmd_apply(args: argparse.Namespace) -> int:
    from gpuwizard.headless import ApplyError, ApplyRequest, apply
    from gpuwizard.planner import Options
    from gpuwizard.recommend.result import Choices

    options = Options(
        env_kind=args.env, env_name=args.env_name, needs_nvcc=args.needs_nvcc, cudnn=args.cudnn, docker=args.docker,
        dcgm=args.dcgm, nccl=args.nccl, hold_driver=args.hold_driver, persistence=not args.no_persistence,
    )  # fmt: skip
    choices = Choices(
        torch=args.torch,
        variant=check_variant(args.variant),
        keep_driver=args.keep_driver,
        needs_nvcc=args.needs_nvcc,
    )
    answers = None
    if args.config is not None:
        if options != Options() or choices != Choices():
            raise UsageError("--config gives every choice; drop the other choice and option flags")
        answers = read_answers(args.config)
        choices, options = answers.choices, answers.options
    elif args.accept_changes:
        raise UsageError("--accept-changes goes with --config answers.yaml")
    request = ApplyRequest(
        choices, options, yes=args.yes, dry_run=args.dry_run, verbose=args.verbose,
        answers=answers, accept_changes=args.accept_changes,
    )  # fmt: skip
    try:
        return apply(backend_for(args), request)
    except ApplyError as error:
        print(f"gpuwizard: {error}", file=sys.stderr)
        return error.code


def read_answers(path: Path) -> Answers:
    from gpuwizard.export.answers import AnswersError, load_answers

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"--config {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--config {path}: not a UTF-8 text file") from None
    try:
        return load_answers(text)
    except AnswersError as error:
        raise UsageError(f"--config {path}: {error}") from None


def machine_for(args: argparse.Namespace) -> Machine:
    """The simulated profile when one is named, else this machine (no root needed)."""
    from gpuwizard.machine import Machine

    if args.simulate:
        backend = backend_for(args)
        return Machine(backend.host, backend.state_dir, backend.python_in, backend.env, True)
    from gpuwizard.detect import local_host
    from gpuwizard.paths import STATE_DIR

    return Machine(local_host, Path(STATE_DIR))


def cmd_bench(args: argparse.Namespace) -> int:
    from gpuwizard.benchcmd import BenchUsageError, run_bench

    try:
        return run_bench(args, machine_for(args))
    except BenchUsageError as error:
        raise UsageError(str(error)) from None


def cmd_export(args: argparse.Namespace) -> int:
    from gpuwizard.exportcmd import ExportUsageError, run_export

    if args.accept_changes and args.config is None:
        raise UsageError("--accept-changes goes with --config answers.yaml")
    answers = read_answers(args.config) if args.config is not None else None
    try:
        return run_export(args, machine_for(args), answers)
    except ExportUsageError as error:
        raise UsageError(str(error)) from None


def cmd_doctor(args: argparse.Namespace) -> int:
    from gpuwizard.doctorcmd import DoctorUsageError, run_doctor

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
    from gpuwizard.detect.capture import capture_host

    directory: Path = args.directory
    if directory.exists() and any(directory.iterdir()):
        raise UsageError(f"capture-host: {directory} is not empty; give a new directory")
    facts = capture_host(host_for(args), directory, args.description)
    where = facts.os.pretty_name if facts.os else "an unknown OS"
    print(f"recorded {len(facts.hardware.gpus)} GPU(s) on {where} into {directory}")
    return EXIT_OK


def cmd_default(args: argparse.Namespace) -> int:
    """No subcommand: the wizard. Without an NVIDIA GPU here it simulates a built-in server."""
    if not args.simulate and not has_nvidia_gpu():
        from gpuwizard.sim.profiles import DEFAULT_PROFILE

        print(f"No NVIDIA GPU here: simulating {DEFAULT_PROFILE} (see `gpuwizard profiles`).")
        args.simulate = DEFAULT_PROFILE
    make_backend = tui_backend(args)
    from gpuwizard.app import run_tui  # Textual is loaded only for the TUI

    message, failed = run_tui(make_backend)
    if message:
        print(message, file=sys.stderr if failed else sys.stdout)
    return EXIT_FAILED if failed else EXIT_OK


def tui_backend(args: argparse.Namespace) -> Callable[[], Backend]:
    """Refuse bad input now; the backend itself (runner, journal, sandbox: ~100 ms of imports) is
    made after the TUI's first frame."""
    import os

    if args.simulate:
        from gpuwizard.sim.profiles import UnknownProfile, find_profile

        try:
            find_profile(args.simulate)
        except UnknownProfile as error:
            raise UsageError(f"--simulate: {error}") from None
        return lambda: backend_for(args)
    if os.geteuid() != 0:
        real_tui_backend()  # raises its one line now, before any screen
    return real_tui_backend


def has_nvidia_gpu() -> bool:
    from gpuwizard.detect import detect_host, local_host

    return bool(detect_host(local_host()).hardware.gpus)


def real_tui_backend() -> Backend:
    try:
        return real_backend()
    except UsageError:
        raise UsageError(
            "the wizard installs drivers and changes the system: run it as root (sudo gpuwizard)"
        ) from None


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
    try:
        args = build_parser().parse_args(argv)
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
