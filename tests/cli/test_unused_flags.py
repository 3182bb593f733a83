"""A flag that would do nothing where it is given is bad input: one line, exit 2, nothing done
(issue 29: ``gpuwizard --reset detect`` exited 0 and ignored --reset). And the flags that do act
still act: ``gpuwizard --simulate P --reset apply`` starts the simulated host over (apply's own
--reset used to overwrite the global one with False)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwizard.frontends import cli
from gpuwizard.frontends.cliargs import UsageError, build_parser
from gpuwizard.runner.layout import JOURNAL
from gpuwizard.sim.sandbox import place_for
from tests.cli.helpers import gpuwizard

T4 = "t4-debian12-fresh"
H100 = "h100x8-ubuntu2204-fresh"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--reset", "detect"], "`gpuwizard detect` reads the simulated host as recorded: drop --reset", id="reset on this machine's detect"),
        pytest.param(["--simulate", T4, "--reset", "detect"], "`gpuwizard detect` reads the simulated host as recorded", id="reset on a simulated detect"),
        pytest.param(["--simulate", T4, "--reset", "recommend"], "`gpuwizard recommend` reads the simulated host as recorded", id="reset on recommend"),
        pytest.param(["--reset", "profiles"], "`gpuwizard profiles` only lists the simulated hosts", id="reset on profiles"),
        pytest.param(["--simulate", T4, "--reset", "capture-host", "/nonexistent/x"], "`gpuwizard capture-host` records the simulated host", id="reset on capture-host"),
        pytest.param(["--reset", "apply", "--dry-run"], "--reset starts a simulated host over; it needs --simulate PROFILE", id="reset before apply, no simulation"),
        pytest.param(["apply", "--reset", "--dry-run"], "it needs --simulate PROFILE", id="apply's own reset, no simulation"),
        pytest.param(["--reset", "export"], "it needs --simulate PROFILE", id="reset on export, no simulation"),
        pytest.param(["--reset", "doctor"], "it needs --simulate PROFILE", id="reset on doctor, no simulation"),
        pytest.param(["--reset", "bench"], "it needs --simulate PROFILE", id="reset on bench, no simulation"),
        pytest.param(["--simulate", T4, "profiles"], "`gpuwizard profiles` lists every simulated host; drop --simulate", id="simulate on profiles"),
        pytest.param(["--simulate", T4, "recommend", "--gpu", "H100", "--os", "ubuntu:22.04"], "--simulate names the host to recommend for", id="simulate and a described host"),
        pytest.param(["recommend", "--simulate", T4, "--facts", "/nonexistent.json"], "--simulate names the host to recommend for", id="simulate and a facts file"),
        pytest.param(["recommend", "--arch", "aarch64"], "describe a host with both --gpu and --os", id="arch alone: this machine's is detected"),
        pytest.param(["recommend", "--facts", "/nonexistent.json", "--arch", "aarch64"], "--facts describes the whole host; drop --gpu/--os/--arch", id="arch beside a facts file"),
        pytest.param(["bench", "--no-dataload", "--dataload", "/var/tmp"], "--no-dataload skips the data-loading check that --dataload DIR is for", id="dataload folder and no dataload"),
        pytest.param(["--simulate", T4, "apply", "--dry-run", "--yes"], "--dry-run changes nothing, so --yes does nothing there", id="dry run with --yes"),
        pytest.param(["--simulate", T4, "apply", "--dry-run", "--verbose"], "so --verbose does nothing there", id="dry run with --verbose"),
        pytest.param(["--simulate", T4, "apply", "--dry-run", "--mok-password-stdin"], "so --mok-password-stdin does nothing there", id="dry run with a MOK password"),
    ],
)  # fmt: skip
def test_a_flag_that_does_nothing_there_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith("gpuwizard: ") and message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["--simulate", T4, "--reset", "apply"],
        ["--simulate", T4, "apply", "--reset"],
        ["--simulate", T4, "--reset", "export"],
        ["--simulate", T4, "--reset", "doctor"],
        ["--simulate", T4, "--reset", "bench"],
        ["--simulate", T4, "--reset"],
        ["--reset"],  # the wizard on a machine without a GPU: the default simulated host over
        ["--simulate", T4, "capture-host", "/nonexistent/x"],
        ["--simulate", T4, "recommend", "--online"],
        ["apply", "--dry-run"],
        ["bench", "--no-dataload"],
    ],
    ids=" ".join,
)
def test_flags_that_act_pass(argv):
    args = build_parser().parse_args(argv)
    assert cli.unused_flag(args) is None


def test_the_global_reset_reaches_apply(tmp_path: Path):
    """``--simulate P --reset apply`` starts the sandbox over (its journal of a run is gone)."""
    first = gpuwizard(tmp_path, "--simulate", H100, "apply", "--yes")
    assert first.returncode == 10, first.stdout + first.stderr  # stopped for a reboot
    journal = place_for(H100, tmp_path / "gpuwizard").state_dir / JOURNAL
    assert journal.exists()
    again = gpuwizard(tmp_path, "--simulate", H100, "--reset", "apply", "--dry-run")
    assert again.returncode == 0, again.stderr
    assert not journal.exists(), "--reset before apply did not start the simulated host over"


def test_the_wizard_refuses_reset_where_it_would_drive_this_machine():
    args = build_parser().parse_args(["--reset"])
    with pytest.raises(UsageError, match="with an NVIDIA GPU here the wizard drives this machine"):
        cli.tui_backend(args, has_gpu=lambda: True)
