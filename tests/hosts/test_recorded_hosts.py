"""Every built-in recorded host produces its golden facts; capture and replay agree.

Regenerate the golden files on purpose, after reviewing the change, with
``GPUWIZARD_UPDATE_GOLDEN=1 pytest tests/hosts``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from gpuwizard.core.facts import HostFacts, NvmlOk
from gpuwizard.machine.detect import detect_host
from gpuwizard.machine.detect.capture import capture_host
from gpuwizard.machine.detect.recording import recorded_host
from tests.conftest import PROFILE_NAMES, TESTS, facts_of, profile_dir

GOLDEN = TESTS / "golden" / "facts"


def test_there_are_at_least_nine_built_in_hosts():
    assert len(PROFILE_NAMES) >= 9


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_recorded_host_matches_its_golden_facts(name):
    actual = json.loads(facts_of(name).to_json())
    golden = GOLDEN / f"{name}.json"
    if os.environ.get("GPUWIZARD_UPDATE_GOLDEN"):
        golden.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert actual == json.loads(golden.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_facts_round_trip_through_json(name):
    facts = facts_of(name)
    assert HostFacts.from_json(facts.to_json()) == facts


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_capturing_a_recorded_host_records_what_detection_reads(name, tmp_path):
    captured = capture_host(recorded_host(profile_dir(name)), tmp_path / "capture", "test")
    replayed = detect_host(recorded_host(tmp_path / "capture"))
    if captured.machine_id is not None:  # the real H200 microVM had none
        assert replayed.machine_id != captured.machine_id  # machine-id is masked on capture
    assert replayed == dataclasses.replace(captured, machine_id=replayed.machine_id)


def test_capture_masks_the_hostname_and_mac_addresses(tmp_path, monkeypatch):
    source = tmp_path / "source"
    shutil.copytree(profile_dir("t4-debian12-fresh"), source)
    (source / "root/sys/class/net/ens4/address").write_text("42:01:0a:80:00:02\n")
    monkeypatch.setattr("socket.gethostname", lambda: "secret-host-7")
    os_release = source / "root/etc/os-release"
    os_release.write_text(os_release.read_text() + 'BUILD_ID="secret-host-7"\n')
    capture_host(recorded_host(source), tmp_path / "out", "masked")
    text = "".join(
        p.read_text(errors="replace") for p in (tmp_path / "out").rglob("*") if p.is_file()
    )
    assert "secret-host-7" not in text


def corrupt(tmp_path: Path, name: str, edits: dict[str, str | None]) -> HostFacts:
    """Copy a profile, overwrite (or delete, with None) files, and detect."""
    target = tmp_path / name
    shutil.copytree(profile_dir(name), target)
    for path, content in edits.items():
        file = target / "root" / path.lstrip("/")
        if content is None:
            file.unlink()
        else:
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(content)
    return detect_host(recorded_host(target))


def test_a_garbage_boot_id_is_unknown_not_new(tmp_path):
    facts = corrupt(
        tmp_path, "h100x8-ubuntu2204-fresh", {"/proc/sys/kernel/random/boot_id": "\x00garbage"}
    )
    assert facts.boot.boot_id is None


def test_missing_proc_files_give_empty_facts_not_errors(tmp_path):
    facts = corrupt(
        tmp_path,
        "h100x8-ubuntu2204-fresh",
        {
            "/proc/modules": None,
            "/proc/meminfo": None,
            "/proc/cpuinfo": None,
            "/etc/os-release": None,
        },
    )
    assert facts.boot.modules == () and facts.hardware.memory_mib == 0 and facts.os is None


def test_a_malformed_pci_attribute_skips_that_device(tmp_path):
    facts = corrupt(
        tmp_path, "t4-debian12-fresh", {"/sys/bus/pci/devices/0000:00:04.0/vendor": "nvidia?\n"}
    )
    assert facts.hardware.gpus == ()


def test_an_unknown_nvidia_device_is_kept_as_unknown(tmp_path):
    facts = corrupt(
        tmp_path, "t4-debian12-fresh", {"/sys/bus/pci/devices/0000:00:04.0/device": "0xfff0\n"}
    )
    assert len(facts.hardware.gpus) == 1
    assert not facts.hardware.gpus[0].model.is_known


def test_a_newer_system_pci_ids_names_a_device_the_catalogue_lacks(tmp_path):
    pci_ids = (
        "#\tVersion: 2099.01.01\n10de  NVIDIA Corporation\n\tfff0  GB202 [GeForce RTX 5099 Test]\n"
    )
    facts = corrupt(
        tmp_path,
        "t4-debian12-fresh",
        {
            "/sys/bus/pci/devices/0000:00:04.0/device": "0xfff0\n",
            "/usr/share/misc/pci.ids": pci_ids,
        },
    )
    assert facts.pci_ids_version == "2099.01.01"
    model = facts.hardware.gpus[0].model
    assert (model.name, model.arch, model.compute_capability) == (
        "GeForce RTX 5099 Test",
        "Blackwell",
        "12.0",
    )


def test_fresh_host_facts():
    facts = facts_of("a100x4-ubuntu2004-fresh")
    assert len(facts.hardware.gpus) == 4
    assert all(g.pci.driver == "nouveau" for g in facts.hardware.gpus)
    assert facts.boot.nouveau_loaded and not facts.boot.headers_present
    assert facts.boot.reboot_required and facts.boot.installed_kernels[-1] == "5.4.0-218-generic"
    assert facts.python.system_python == "3.8"


def test_hgx_fabric_is_detected():
    facts = facts_of("h100x8-ubuntu2204-fresh")
    assert len(facts.hardware.nvswitches) == 4 and len(facts.hardware.infiniband) == 8
    assert {n.name for n in facts.hardware.nics} == {
        "eno1",
        "ibp26s0",
        "ibp60s0",
    }  # docker0 is virtual


def test_installed_driver_facts():
    facts = facts_of("v100x4-ubuntu2204-driver535")
    assert isinstance(facts.boot.nvml, NvmlOk) and facts.boot.nvml.driver_version == "535.247.01"
    assert facts.boot.nvidia_loaded and facts.installs.nvidia_smi
    assert facts.installs.has_package("nvidia-driver-535-server")


def test_wsl_gpus_come_from_nvml():
    facts = facts_of("wsl2-ubuntu2204-rtx4090")
    assert facts.platform.wsl
    assert [g.model.name for g in facts.hardware.gpus] == ["GeForce RTX 4090"]


def test_secure_boot_and_non_gpu_functions():
    facts = facts_of("rtx5090-ubuntu2404-secureboot")
    assert facts.boot.secure_boot == "enabled"
    assert len(facts.hardware.gpus) == 1  # the card's HD audio function is not a GPU


def test_rhel_family_reads_rpm_and_skips_dpkg():
    facts = facts_of("l40sx4-rocky9-fresh")
    assert facts.installs.has_package("kernel-devel")
    assert not facts.boot.dpkg_interrupted


def test_capture_records_the_session_and_the_files_of_existing_pytorch(tmp_path, monkeypatch):
    """Issue 26: capture-host records what the search for existing PyTorch reads (the places and
    their metadata files) and the PATH it saw, so the next real machine is a complete fixture;
    the hostname is masked there too."""
    source = tmp_path / "source"
    shutil.copytree(profile_dir("h200-vm-ubuntu2404-preinstalled"), source)
    environ = json.loads((source / "environ.json").read_text())
    environ["HOME"] = "/home/secret-host-7"
    (source / "environ.json").write_text(json.dumps(environ))
    monkeypatch.setattr("socket.gethostname", lambda: "secret-host-7")
    capture_host(recorded_host(source), tmp_path / "out", "preinstalled")
    out = tmp_path / "out"
    assert json.loads((out / "environ.json").read_text()) == {
        "HOME": "/home/gpu-host",
        "PATH": "/opt/torch/.venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    }
    site = "root/opt/torch/.venv/lib/python3.12/site-packages"
    for recorded in (
        "root/opt/torch/.venv/pyvenv.cfg",
        f"{site}/torch/version.py",
        f"{site}/torchvision/version.py",
    ):
        assert (out / recorded).is_file(), recorded
    assert (
        json.loads((out / "links.json").read_text())["/opt/torch/.venv/bin/python3"]
        == "/usr/bin/python3"
    )
