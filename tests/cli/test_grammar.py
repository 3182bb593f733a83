"""The command line's grammar: a subcommand's options are added only when it is parsed
(``OneLineParser``), so every subcommand must still show, accept and refuse its own options."""

from __future__ import annotations

import pytest

from gpuwizard.frontends.cliargs import SUBCOMMANDS, UsageError, build_parser

NAMES = [name for name, _help, _arguments in SUBCOMMANDS]


def test_the_top_level_help_lists_every_subcommand_with_its_line(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for name, help_line, _arguments in SUBCOMMANDS:
        assert name in text
        assert " ".join(help_line.split()) in text


@pytest.mark.parametrize(
    ("command", "option"),
    [
        ("detect", "--json"),
        ("recommend", "--driver-branch"),
        ("apply", "--mok-password-stdin"),
        ("bench", "--batch-size"),
        ("export", "--output"),
        ("doctor", "--bundle"),
        ("capture-host", "--description"),
    ],
)
def test_a_subcommands_help_shows_its_own_options_only(command: str, option: str, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([command, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert f"usage: gpuwizard {command}" in out
    assert option in out
    others = {"detect": "--mok-password-stdin", "apply": "--bundle"}
    assert others.get(command, "--no-such-option") not in out


def test_options_are_parsed_by_the_subcommand_that_owns_them() -> None:
    args = build_parser().parse_args(["apply", "--dry-run", "--env", "conda", "--cudnn"])
    assert (args.command, args.dry_run, args.env, args.cudnn) == ("apply", True, "conda", True)
    assert build_parser().parse_args(["detect"]).json is False
    assert build_parser().parse_args(["profiles"]).command == "profiles"


def test_another_subcommands_option_is_one_line_naming_the_help() -> None:
    with pytest.raises(UsageError, match=r"unrecognized arguments: --dry-run \(see `gpuwizard"):
        build_parser().parse_args(["detect", "--dry-run"])
    with pytest.raises(
        UsageError, match=r"argument --env: invalid choice: 'mamba'.*gpuwizard apply"
    ):
        build_parser().parse_args(["apply", "--env", "mamba"])


def test_one_parser_parses_twice_the_same_way() -> None:
    parser = build_parser()
    first = parser.parse_args(["export", "--format", "script"])
    second = parser.parse_args(["export", "--format", "script"])
    assert first == second
