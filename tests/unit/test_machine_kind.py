"""Virtual hardware and containers described truly: what the system runs in, its disks and
links, in the words the command line and the Machine view share."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwizard.core.facts import Disk, Nic, NvmlUnavailable, Platform
from gpuwizard.core.machine_words import disk_words, human_bytes, nic_words, platform_words
from gpuwizard.machine.detect.platform import read_platform, read_virtualization
from gpuwizard.machine.detect.recording import RecordedCommands, command_key
from gpuwizard.machine.detect.system import is_hypervisor_disk, read_disks
from gpuwizard.machine.host import Host, Output
from tests.conftest import facts_of

MISSING = Output(127, "")
NONE = Output(1, "none\n")


def host(
    root: Path,
    vm: Output = MISSING,
    container: Output = MISSING,
    links: dict[str, str] | None = None,
) -> Host:
    answers = {
        command_key(["systemd-detect-virt", "--vm"]): vm,
        command_key(["systemd-detect-virt", "--container"]): container,
        command_key(["uname", "-m"]): Output(0, "x86_64\n"),
    }
    return Host(
        root=root,
        run=RecordedCommands(answers),
        nvml=lambda: NvmlUnavailable("none"),
        links=links or {},
    )


def write(root: Path, path: str, text: str = "") -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


@pytest.mark.parametrize(
    ("files", "vm", "expected"),
    [
        pytest.param({}, Output(0, "kvm\n"), "kvm", id="systemd-detect-virt names it"),
        pytest.param({"/sys/class/dmi/id/sys_vendor": "Amazon EC2\n"}, NONE, None, id="it says none: trusted"),
        pytest.param({"/sys/class/dmi/id/sys_vendor": "QEMU\n", "/sys/class/dmi/id/product_name": "KVM\n"}, MISSING, "kvm",
                     id="no tool: DMI, product name first (KVM over QEMU)"),
        pytest.param({"/sys/class/dmi/id/sys_vendor": "Amazon EC2\n"}, MISSING, "amazon", id="no tool: Amazon EC2 by DMI"),
        pytest.param({"/proc/cpuinfo": "processor\t: 0\nflags\t\t: fpu vme hypervisor lahf_lm\n"}, MISSING, "unknown",
                     id="no tool, no DMI: the CPU's hypervisor flag"),
        pytest.param({"/proc/cpuinfo": "processor\t: 0\nflags\t\t: fpu vme lahf_lm\n"}, MISSING, None, id="bare metal"),
    ],
)  # fmt: skip
def test_the_hypervisor(
    tmp_path: Path, files: dict[str, str], vm: Output, expected: str | None
) -> None:
    for path, text in files.items():
        write(tmp_path, path, text)
    assert read_virtualization(host(tmp_path, vm=vm)) == expected


def test_systemd_is_there_when_its_runtime_folder_is(tmp_path: Path) -> None:
    assert read_platform(host(tmp_path), "6.8.0").systemd is False
    (tmp_path / "run/systemd/system").mkdir(parents=True)
    assert read_platform(host(tmp_path), "6.8.0").systemd is True


def test_the_h200_microvm_is_a_container_image_in_a_vm_without_systemd() -> None:
    platform = facts_of("h200-vm-ubuntu2404-preinstalled").platform
    assert (platform.container, platform.virtualization, platform.systemd) == (
        "docker",
        "unknown",
        False,
    )
    assert (
        platform_words(platform)
        == "docker container · on a VM (its hypervisor does not say which) · no systemd"
    )


@pytest.mark.parametrize(
    ("platform", "words"),
    [
        (Platform("x86_64", systemd=True), None),
        (Platform("x86_64", "kvm", systemd=True), "a KVM VM"),
        (Platform("x86_64", "amazon", systemd=True), "an Amazon EC2 VM"),
        (Platform("x86_64", None, "lxc", systemd=False), "lxc container · no systemd"),
        (Platform("x86_64", "microsoft", wsl=True, systemd=False), "WSL2 on Windows · no systemd"),
    ],
)
def test_platform_words(platform: Platform, words: str | None) -> None:
    assert platform_words(platform) == words


@pytest.mark.parametrize(
    ("name", "path", "model", "virtual"),
    [
        ("vda", None, None, True),
        ("xvda", None, None, True),
        (
            "sda",
            "../devices/pci0000:00/0000:00:04.0/virtio1/host0/target0:0:1/0:0:1:0/block/sda",
            "Google PersistentDisk",
            True,
        ),
        (
            "sdb",
            "../devices/LNXSYSTM:00/LNXSYBUS:00/ACPI0004:00/VMBUS:00/f8b3781b/host1/target1:0:0/1:0:0:0/block/sdb",
            "Msft Virtual Disk",
            True,
        ),
        ("sda", None, "QEMU QEMU HARDDISK", True),
        ("nvme0n1", None, "Amazon Elastic Block Store", True),
        ("nvme1n1", None, "Amazon EC2 NVMe Instance Storage", False),
        (
            "sda",
            "../devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda",
            "ATA ST4000DM004-2U91",
            False,
        ),
    ],
)
def test_a_hypervisors_disk_is_known_by_name_place_or_model(
    name: str, path: str | None, model: str | None, virtual: bool
) -> None:
    assert is_hypervisor_disk(name, path, model) is virtual


def test_disks_are_read_with_their_model_and_kind(tmp_path: Path) -> None:
    write(tmp_path, "/sys/block/vda/size", "536870912\n")
    write(tmp_path, "/sys/block/vda/queue/rotational", "1\n")
    write(tmp_path, "/sys/block/sda/size", "7814037168\n")
    write(tmp_path, "/sys/block/sda/queue/rotational", "1\n")
    write(tmp_path, "/sys/block/sda/device/vendor", "ATA     \n")
    write(tmp_path, "/sys/block/sda/device/model", "ST4000DM004-2U91\n")
    write(tmp_path, "/sys/block/loop0/size", "8\n")
    disks = {d.name: d for d in read_disks(host(tmp_path))}
    assert set(disks) == {"vda", "sda"}
    assert (disks["vda"].kind, disks["vda"].model) == ("virtual", None)
    assert (disks["sda"].kind, disks["sda"].model) == ("hdd", "ATA ST4000DM004-2U91")


@pytest.mark.parametrize(
    ("size", "said"),
    [(0, "0 B"), (999, "999 B"), (331_612_160, "332 MB"), (274_877_906_944, "275 GB"),
     (3_840_755_982_336, "3.84 TB"), (12_000_000_000, "12.0 GB")],
)  # fmt: skip
def test_sizes_in_human_units(size: int, said: str) -> None:
    assert human_bytes(size) == said


def test_a_virtual_disk_is_never_an_hdd_and_a_speedless_link_is_unknown() -> None:
    assert (
        disk_words(Disk("vda", 274_877_906_944, True, False, virtual=True))
        == "vda 275 GB virtual disk"
    )
    assert (
        disk_words(Disk("vdb", 331_612_160, True, False, virtual=True)) == "vdb 332 MB virtual disk"
    )
    assert disk_words(Disk("sda", 4 * 10**12, True, False, "ATA X")) == "sda 4.00 TB HDD"
    assert disk_words(Disk("sdb", 10**12, True, False)) == "sdb 1.00 TB disk of unknown kind"
    assert nic_words(Nic("eth0", "ethernet", None)) == "eth0 speed unknown"
    assert nic_words(Nic("ibp26s0", "infiniband", 400_000)) == "ibp26s0 400 Gb/s InfiniBand"
