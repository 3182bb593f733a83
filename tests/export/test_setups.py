"""Which setup an export comes from: the latest run's, or the last run that changed the machine
when the latest only verified it (gpuwizard.setup.setups)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from gpuwizard.export.source import ALREADY_SET_UP, ExportSource
from gpuwizard.runner.control import prepare_run
from gpuwizard.setup.setups import SetupError, exportable_setup
from tests.cli.helpers import gpuwizard
from tests.export.conftest import source_for

H100 = "h100x8-ubuntu2204-fresh"


def verify_only(source: ExportSource) -> ExportSource:
    """The plan the wizard makes once the machine is set up: nothing to do but verify."""
    steps = tuple(s if s.id == "verify-torch" else dataclasses.replace(s, actions=()) for s in source.plan.steps)  # fmt: skip
    return dataclasses.replace(source, plan=dataclasses.replace(source.plan, steps=steps))


def run(state: Path, source: ExportSource, age_s: float = 0) -> None:
    prepare_run(state, source.plan, source.selection, source.facts)
    for old in state.glob("journal-before-*.json"):  # older runs are older on disk too
        stamp = old.stat().st_mtime - age_s
        os.utime(old, (stamp, stamp))


def test_no_run_here_means_nothing_to_export(tmp_path: Path) -> None:
    assert exportable_setup(tmp_path) is None


def test_the_latest_run_is_exported_when_it_changed_the_machine(tmp_path: Path) -> None:
    run(tmp_path, source_for(H100))
    setup = exportable_setup(tmp_path)
    assert setup is not None and setup.note is None
    assert setup.source.plan == source_for(H100).plan


def test_after_a_run_that_only_verified_the_run_that_set_the_machine_up_is_exported(
    tmp_path: Path,
) -> None:
    full = source_for(H100)
    run(tmp_path, full)
    run(tmp_path, verify_only(full), age_s=60)
    run(tmp_path, verify_only(full), age_s=60)  # and again: still the setup run

    setup = exportable_setup(tmp_path)

    assert setup is not None
    assert setup.source.plan == full.plan and setup.source.facts == full.facts
    assert setup.note and "earlier run" in setup.note


def test_with_no_earlier_setup_the_verify_only_plan_is_exported_and_said_so(
    tmp_path: Path,
) -> None:
    run(tmp_path, verify_only(source_for(H100)))
    setup = exportable_setup(tmp_path)
    assert setup is not None and setup.source.already_set_up and setup.note == ALREADY_SET_UP


def test_a_damaged_latest_journal_is_an_error_not_a_guess(tmp_path: Path) -> None:
    run(tmp_path, source_for(H100))
    (tmp_path / "journal.json").write_text("{")
    (tmp_path / "journal.json.bak").unlink(missing_ok=True)
    with pytest.raises(SetupError, match="cannot read the wizard's journal"):
        exportable_setup(tmp_path)


def test_gpuwizard_export_after_the_wizard_was_opened_again_exports_the_setup(
    tmp_path: Path,
) -> None:
    """8x H100: installed and rebooted; then a run that only verified (the wizard opened again)."""
    for _ in range(2):
        gpuwizard(tmp_path, "--simulate", H100, "apply", "--yes")
    state = tmp_path / "gpuwizard" / "sim" / H100 / "state"
    setup = exportable_setup(state)
    assert setup is not None and not setup.source.already_set_up
    run(state, verify_only(setup.source), age_s=60)

    done = gpuwizard(tmp_path, "--simulate", H100, "export", "--format", "script")

    assert done.returncode == 0, done.stderr
    assert "an earlier run" in done.stderr
    assert "install-nvidia-driver" in done.stdout
