from __future__ import annotations

import dataclasses

import pytest

from gpuwizard.core.facts import Disk, FreeSpace, Nic, PcieLink
from gpuwizard.recommend.sizing import assess
from tests.conftest import facts_of


def findings(facts, table):
    return {f.id: f for f in assess(facts, table)}


def with_hardware(name, **changes):
    facts = facts_of(name)
    return dataclasses.replace(facts, hardware=dataclasses.replace(facts.hardware, **changes))


def test_a_well_sized_hgx_passes_every_check(table):
    found = findings(facts_of("h100x8-ubuntu2204-fresh"), table)
    assert {f.severity for f in found.values()} == {"ok"}
    assert "InfiniBand" in found["network"].title


def test_ram_below_twice_the_gpu_memory_is_a_warning(table):
    facts = with_hardware(
        "h100x8-ubuntu2204-fresh", memory_mib=1024 * 1024
    )  # 1 TiB for 640 GiB of HBM
    ram = findings(facts, table)["ram"]
    assert ram.severity == "warning" and "1280 GiB" in ram.reason


@pytest.mark.parametrize(
    ("profile", "severity"),
    [
        ("rtx5090-ubuntu2404-secureboot", "ok"),  # 64 GB server (62 GiB MemTotal), one 32 GB GPU
        ("wsl2-ubuntu2204-rtx4090", "warning"),  # 31 GiB for a 24 GB GPU: below 2x, truly
        ("a100x4-ubuntu2004-fresh", "ok"),
    ],
)
def test_the_guides_rule_ram_at_least_twice_this_hosts_gpu_memory(table, profile, severity):
    """The guide's 1:2 rule against this host's GPUs, counting what MemTotal leaves out."""
    assert findings(facts_of(profile), table)["ram"].severity == severity


def test_ram_well_below_the_rule_even_with_what_the_kernel_reserves_is_a_warning(table):
    facts = with_hardware("rtx5090-ubuntu2404-secureboot", memory_mib=58 * 1024)
    assert findings(facts, table)["ram"].severity == "warning"


def test_gpu_memory_comes_from_nvml_once_a_driver_exists(table):
    ram = findings(facts_of("v100x4-ubuntu2204-driver535"), table)["ram"]
    assert "64 GiB of GPU memory" in ram.title


@pytest.mark.parametrize(
    ("disks", "severity", "title"),
    [
        pytest.param(
            (Disk("sda", 10**12, True, False, "ATA ST4000DM004-2U91"),),
            "warning",
            "only spinning disks",
            id="a SATA HDD",
        ),
        pytest.param(
            (Disk("sda", 10**12, True, False),),
            "info",
            "disk kind unknown (sda)",
            id="rotational, no model: no evidence",
        ),
        pytest.param((Disk("sda", 10**12, False, False),), "info", "no NVMe disk", id="an SSD"),
        pytest.param(
            (Disk("nvme0n1", 10**12, False, True), Disk("sdb", 10**13, True, False, "ATA X")),
            "ok",
            "NVMe: nvme0n1",
            id="NVMe beside an HDD",
        ),
        pytest.param(
            (
                Disk("vda", 10**12, True, False, virtual=True),
                Disk("vdb", 10**9, True, False, virtual=True),
            ),
            "info",
            "virtual disks (vda, vdb): speed unknown",
            id="virtio disks say rotational: no warning",
        ),
        pytest.param(
            (Disk("nvme0n1", 10**12, False, True, "Amazon Elastic Block Store", virtual=True),),
            "info",
            "virtual disks (nvme0n1): speed unknown",
            id="EBS over NVMe is a network disk",
        ),
    ],
)
def test_disk_kind(table, disks, severity, title):
    found = findings(with_hardware("t4-debian12-fresh", disks=disks), table)["disks"]
    assert (found.severity, found.title) == (severity, title)


def test_the_h200_microvm_has_no_slow_storage_warning(table):
    """Issue 26: virtio disks read 1,667 MB/s there, yet were called spinning disks."""
    found = findings(facts_of("h200-vm-ubuntu2404-preinstalled"), table)
    assert found["disks"].severity == "info" and "HDD" not in found["disks"].title
    assert "spinning" not in " ".join(f.title + f.reason for f in found.values())


def test_infiniband_is_counted_as_the_machine_view_counts_it(table):
    """Issue 31: Machine said "8 InfiniBand" while Sizing said "InfiniBand x2"."""
    found = findings(facts_of("h100x8-ubuntu2204-fresh"), table)
    assert found["network"].title.startswith("8 InfiniBand adapters")


@pytest.mark.parametrize(("free_gib", "severity"), [(200, "ok"), (15, "warning"), (5, "error")])
def test_free_space_for_the_install(table, free_gib, severity):
    facts = with_hardware("t4-debian12-fresh", free_space=(FreeSpace("/", free_gib * 1024**3),))
    assert findings(facts, table)["free-space"].severity == severity


def test_slow_network_is_advice_for_multi_node_only(table):
    facts = with_hardware("t4-debian12-fresh", nics=(Nic("eth0", "ethernet", 1000),))
    network = findings(facts, table)["network"]
    assert network.severity == "info" and "10 Gb/s" in network.reason


def test_end_of_life_os_is_a_warning(table):
    os_finding = findings(facts_of("a100x4-ubuntu2004-fresh"), table)["os"]
    assert os_finding.severity == "warning" and "2025-05" in os_finding.reason


def test_unsupported_os_is_an_error(table):
    facts = facts_of("t4-debian12-fresh")
    facts = dataclasses.replace(
        facts, os=dataclasses.replace(facts.os, id="centos", version_id="7", id_like=("rhel",))
    )
    assert findings(facts, table)["os"].severity == "error"


def test_a_newer_release_of_a_known_os_is_a_warning_with_the_best_guess(table):
    facts = facts_of("t4-debian12-fresh")
    facts = dataclasses.replace(
        facts, os=dataclasses.replace(facts.os, version_id="14", version_codename="forky")
    )
    finding = findings(facts, table)["os"]
    assert finding.severity == "warning" and "treated as Debian 13" in finding.reason


def test_a_downtrained_pcie_link_is_reported(table):
    facts = facts_of("t4-debian12-fresh")
    gpu = facts.hardware.gpus[0]
    slow = dataclasses.replace(
        gpu,
        pci=dataclasses.replace(gpu.pci, link=PcieLink("2.5 GT/s PCIe", "8.0 GT/s PCIe", 16, 16)),
    )
    found = findings(
        dataclasses.replace(facts, hardware=dataclasses.replace(facts.hardware, gpus=(slow,))),
        table,
    )
    assert found["pcie"].severity == "warning" and "2.5 GT/s" in found["pcie"].reason


def test_a_container_in_a_microvm_without_systemd_is_said_and_what_follows(table):
    platform = findings(facts_of("h200-vm-ubuntu2404-preinstalled"), table)["platform"]
    assert platform.severity == "warning"
    assert (
        platform.title
        == "docker container · on a VM (its hypervisor does not say which) · no systemd"
    )
    assert "the driver belongs to the host" in platform.reason
    assert "detached process (setsid), not a systemd unit" in platform.reason


def test_no_systemd_alone_is_said(table):
    facts = facts_of("t4-debian12-fresh")
    facts = dataclasses.replace(facts, platform=dataclasses.replace(facts.platform, systemd=False))
    platform = findings(facts, table)["platform"]
    assert platform.severity == "info" and "setsid" in platform.reason


def test_wsl_is_explained(table):
    assert "Windows" in findings(facts_of("wsl2-ubuntu2204-rtx4090"), table)["platform"].reason
