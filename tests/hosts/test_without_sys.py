"""A machine whose /sys cannot be read (a chroot, a locked-down container) is not a machine
without GPUs: detect and doctor say that /sys could not be read (issue 29). Both sides from
recorded hosts: the no-GPU server as recorded, and the same recording with its /sys taken away.
The real machine's side is tests/realhost/test_without_sys.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from gpuwizard.core.facts import HostFacts
from gpuwizard.doctor.checks import NO_GPU, NO_SYSFS, run_checks
from gpuwizard.doctor.readings import read_observed
from gpuwizard.frontends.report import host_lines
from gpuwizard.machine.detect import detect_host
from gpuwizard.machine.detect.recording import recorded_host
from gpuwizard.recommend.os_support import load_os_support
from gpuwizard.recommend.sizing import assess
from gpuwizard.recommend.table import CompatTable
from tests.conftest import profile_dir

NOGPU = "nogpu-ubuntu2204"
NO_STATE = Path("/nonexistent/gpuwizard-state")


def recording_without_sys(tmp_path: Path) -> Path:
    folder = tmp_path / "no-sys"
    shutil.copytree(profile_dir(NOGPU), folder)
    shutil.rmtree(folder / "root" / "sys")
    for recorded in ("links.json", "empty_dirs.json"):  # what the recording lists under /sys
        path = folder / recorded
        data = json.loads(path.read_text())
        kept = (
            {k: v for k, v in data.items() if not k.startswith("/sys/")}
            if isinstance(data, dict)
            else [p for p in data if not p.startswith("/sys/")]
        )
        path.write_text(json.dumps(kept))
    return folder


def detected(folder: Path) -> HostFacts:
    return detect_host(recorded_host(folder))


def test_a_machine_with_sys_and_no_gpu_says_no_gpu():
    facts = detected(profile_dir(NOGPU))
    assert facts.hardware.pci_visible
    lines = host_lines(facts, assess(facts, load_os_support()))
    assert "GPU      no NVIDIA GPU found" in lines


def test_without_sys_detect_says_sys_could_not_be_read(tmp_path):
    facts = detected(recording_without_sys(tmp_path))
    assert not facts.hardware.pci_visible and facts.hardware.gpus == ()
    lines = host_lines(facts, assess(facts, load_os_support()))
    assert any(line.startswith("GPU      unknown: /sys could not be read") for line in lines)
    assert not any("no NVIDIA GPU" in line or "no NVMe disk" in line for line in lines)


def test_the_doctor_says_which_of_the_two_it_is(tmp_path, table: CompatTable):
    with_sys = detected(profile_dir(NOGPU))
    seen = read_observed(recorded_host(profile_dir(NOGPU)), with_sys, NO_STATE)
    assert run_checks(with_sys, seen, table)[0] == NO_GPU
    folder = recording_without_sys(tmp_path)
    without = detected(folder)
    findings = run_checks(without, read_observed(recorded_host(folder), without, NO_STATE), table)
    assert findings[0] == NO_SYSFS and findings[0].severity == "unknown"
    assert "/sys could not be read" in NO_SYSFS.title and "PCI bus" not in NO_SYSFS.explanation


def test_facts_from_before_the_field_read_as_a_visible_bus():
    facts = detected(profile_dir(NOGPU))
    text = facts.to_json().replace(',\n    "pci_visible": true', "")
    assert '"pci_visible"' not in text
    assert HostFacts.from_json(text).hardware.pci_visible
