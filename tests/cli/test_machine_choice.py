"""Where gpuwizard chooses the simulated machine, in-process: the simulated side of every choice
(the real side is in tests/realhost/test_machine_choice.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from gpuwizard.frontends import cli
from gpuwizard.frontends.cliargs import UsageError

PROFILE = "t4-debian12-fresh"


def args(**given: object) -> argparse.Namespace:
    return argparse.Namespace(**{"simulate": None, "reset": False, **given})


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))


def test_a_named_profile_is_what_every_command_sees() -> None:
    assert "recorded-hosts" in str(cli.host_for(args(simulate=PROFILE)).root)
    assert cli.backend_for(args(simulate=PROFILE)).name == f"simulated {PROFILE}"
    assert cli.machine_for(args(simulate=PROFILE)).simulated
    assert cli.tui_backend(args(simulate=PROFILE))().simulated


def test_without_a_gpu_the_wizard_simulates_the_default_server_and_says_so(capsys) -> None:
    backend = cli.tui_backend(args(), has_gpu=lambda: False)()
    assert backend.simulated
    assert backend.name == "simulated h100x8-ubuntu2204-fresh (no GPU here)"
    said = capsys.readouterr().out
    assert said.startswith("No NVIDIA GPU: simulating h100x8-ubuntu2204-fresh")


@pytest.mark.parametrize("columns", [80, 60, 40])
def test_the_line_before_the_tui_fits_the_terminal_and_breaks_at_words(columns: int) -> None:
    """It stays on the terminal after the TUI: 80 columns hold it whole; a narrower terminal
    breaks it between words, never leaving `).` alone on a line."""
    said = cli.no_gpu_line("h100x8-ubuntu2204-fresh", columns)
    rows = said.splitlines()
    assert all(len(row) <= columns for row in rows)
    assert (
        " ".join(rows)
        == "No NVIDIA GPU: simulating h100x8-ubuntu2204-fresh (see `gpuwizard profiles`)."
    )
    assert len(rows) == (1 if columns == 80 else len(rows)) and all(len(row) > 2 for row in rows)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        pytest.param("", "--simulate: no profile named", id="empty"),
        pytest.param("   ", "--simulate: no profile named", id="blank"),
        pytest.param("../x", "--simulate: '../x' is a path", id="parent folder"),
        pytest.param("/etc", "--simulate: '/etc' is a path", id="absolute path"),
        pytest.param("nope", "--simulate: no built-in profile 'nope'", id="unknown"),
    ],
)
def test_a_bad_profile_is_a_usage_error_never_the_real_machine(name: str, message: str) -> None:
    for choose in (cli.host_for, cli.backend_for, cli.machine_for, cli.tui_backend):
        with pytest.raises(UsageError) as refused:
            choose(args(simulate=name))
        assert str(refused.value).startswith(message)
        assert "`gpuwizard profiles`" in str(refused.value)


def test_accept_changes_needs_an_answers_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--simulate", PROFILE, "apply", "--accept-changes"]) == 2
    assert "--accept-changes goes with --config answers.yaml" in capsys.readouterr().err
