"""--driver-branch, --kernel-modules and --env-python on recommend, apply and export: the same
pin gives the same plan everywhere, and one that cannot be honoured here is one line, exit 3."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.cli.helpers import gpuwizard

H100 = "h100x8-ubuntu2204-fresh"
V100 = "v100x4-ubuntu2204-driver535"
PINS = ("--driver-branch", "535", "--kernel-modules", "proprietary", "--env-python", "3.11")


def test_recommend_apply_and_export_honour_the_same_pins(tmp_path: Path):
    shown = gpuwizard(tmp_path, "--simulate", H100, "recommend", "--json", *PINS)
    assert shown.returncode == 0, shown.stderr
    contract = json.loads(shown.stdout)
    assert (contract["driver"]["branch"], contract["driver"]["flavor"]) == ("535", "proprietary")
    assert contract["python"] == {"version": "3.11", "action": "install"}

    planned = gpuwizard(tmp_path, "--simulate", H100, "--reset", "apply", "--dry-run", *PINS)
    assert planned.returncode == 0, planned.stderr
    assert "driver: install R535 (proprietary)" in planned.stdout
    assert "Python 3.11, os-package" in planned.stdout

    exported = gpuwizard(tmp_path, "--simulate", H100, "export", "--format", "answers", *PINS)
    assert exported.returncode == 0, exported.stderr
    answers = yaml.safe_load(exported.stdout)
    assert answers["request"]["driver_branch"] == "535"
    assert answers["request"]["driver_flavour"] == "proprietary"
    assert answers["request"]["python"] == "3.11"
    assert "driver: install R535 (proprietary)" in answers["plan"]


def test_a_pin_this_host_cannot_honour_is_one_line_exit_3(tmp_path: Path):
    done = gpuwizard(tmp_path, "--simulate", V100, "apply", "--dry-run", "--kernel-modules", "open")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Tesla V100 SXM2 16GB (Volta) cannot use the open kernel modules" in done.stderr
    assert "Traceback" not in done.stderr


def test_pins_and_an_answers_file_do_not_mix(tmp_path: Path):
    answers = tmp_path / "a.yaml"
    answers.write_text("schema: 2\n")
    done = gpuwizard(
        tmp_path, "--simulate", H100, "apply", "--config", str(answers), "--driver-branch", "580"
    )
    assert done.returncode == 2 and "--config gives every choice" in done.stderr


def test_export_from_a_run_repeats_the_pins_that_run_was_made_from(tmp_path: Path):
    ran = gpuwizard(
        tmp_path, "--simulate", H100, "--reset", "apply", "--yes", "--driver-branch", "535"
    )
    assert ran.returncode == 10, ran.stdout + ran.stderr  # stopped for the simulated reboot
    exported = gpuwizard(tmp_path, "--simulate", H100, "export", "--format", "answers")
    assert exported.returncode == 0, exported.stderr
    choices = yaml.safe_load(exported.stdout)["request"]
    assert choices["driver_branch"] == "535" and "python" not in choices
