"""Every parser on real output formats, including the broken ones seen in the field."""

from __future__ import annotations

import pytest

from gpuwizard.core.version import kernel_sort_key
from gpuwizard.machine.detect.installs import parse_package_list
from gpuwizard.machine.detect.kernel import (
    parse_efi_secure_boot,
    parse_mokutil_sb_state,
    parse_proc_modules,
)
from gpuwizard.machine.detect.nvml import cuda_version_text, normalise_bus_id
from gpuwizard.machine.detect.online import parse_pip_index_versions
from gpuwizard.machine.detect.os_release import parse_os_release
from gpuwizard.machine.detect.pci import parse_hex_id, parse_pci_ids_nvidia
from gpuwizard.machine.detect.platform import parse_boot_id, parse_cloud_init_status
from gpuwizard.machine.detect.system import parse_cpuinfo, parse_df, parse_meminfo_mib, parse_speed

LINUX_MINT = """NAME="Linux Mint"
VERSION="21.3 (Virginia)"
ID=linuxmint
ID_LIKE="ubuntu debian"
PRETTY_NAME="Linux Mint 21.3"
VERSION_ID="21.3"
VERSION_CODENAME=virginia
UBUNTU_CODENAME=jammy
"""
ALMA = """NAME="AlmaLinux"
VERSION="9.4 (Seafoam Ocelot)"
ID="almalinux"
ID_LIKE="rhel centos fedora"
VERSION_ID="9.4"
"""


def test_os_release_of_a_derivative_keeps_its_base():
    info = parse_os_release(LINUX_MINT)
    assert info is not None
    assert (info.id, info.version_id, info.id_like, info.version_codename) == (
        "linuxmint",
        "21.3",
        ("ubuntu", "debian"),
        "jammy",
    )


def test_os_release_quoting_comments_and_escapes():
    text = 'ID="rocky"\n# a comment\nVERSION_ID=\'9.6\'\nPRETTY_NAME="Rocky \\"Blue\\" Onyx"\nBAD LINE\n'
    info = parse_os_release(text)
    assert info is not None
    assert (info.id, info.version_id, info.pretty_name) == ("rocky", "9.6", 'Rocky "Blue" Onyx')


@pytest.mark.parametrize("text", ["", "NAME=nothing\n", "\x00\xff garbage", 'ID="unterminated\n'])
def test_os_release_without_a_usable_id(text):
    info = parse_os_release(text)
    assert info is None or info.id == "unterminated"


def test_alma_is_read_with_its_rhel_family():
    info = parse_os_release(ALMA)
    assert info is not None and info.id_like == ("rhel", "centos", "fedora")


def test_proc_modules_keeps_only_the_gpu_stack():
    text = (
        "nvidia_uvm 4923392 0 - Live 0x0000000000000000 (POE)\n"
        "nvidia 54546432 8 nvidia_uvm, Live 0x0000000000000000 (POE)\n"
        "nouveau 2793472 0 - Live 0x0000000000000000\n"
        "tls 155648 0 - Live 0x0000000000000000\n\n"
    )
    assert parse_proc_modules(text) == ("nouveau", "nvidia", "nvidia_uvm")


def test_kernels_sort_numerically():
    kernels = ["5.15.0-101-generic", "5.15.0-91-generic", "5.4.0-216-generic"]
    assert sorted(kernels, key=kernel_sort_key) == [
        "5.4.0-216-generic",
        "5.15.0-91-generic",
        "5.15.0-101-generic",
    ]


@pytest.mark.parametrize(
    ("output", "state"),
    [
        ("SecureBoot enabled\n", "enabled"),
        ("SecureBoot disabled\nPlatform is in Setup Mode\n", "disabled"),
        ("This system doesn't support Secure Boot\n", "unsupported"),
        ("EFI variables are not supported on this system\n", "unsupported"),
        ("Failed to read SecureBoot\n", "unknown"),
    ],
)
def test_mokutil_sb_state(output, state):
    assert parse_mokutil_sb_state(output) == state


def test_the_efi_variable_is_four_attribute_bytes_then_the_value():
    assert parse_efi_secure_boot(b"\x06\x00\x00\x00\x01") == "enabled"
    assert parse_efi_secure_boot(b"\x06\x00\x00\x00\x00") == "disabled"
    assert parse_efi_secure_boot(b"\x06\x00") == "unknown"


@pytest.mark.parametrize(
    ("returncode", "output", "state"),
    [
        (0, "status: done\n", "done"),
        (0, "status: running\n", "running"),
        (0, "status: not started\n", "running"),
        (2, "status: done\n", "degraded"),
        (1, "status: error\n", "error"),
        (0, "status: disabled\n", "disabled"),
        (127, "", "absent"),
        (0, "garbage\n", "unknown"),
    ],
)
def test_cloud_init_status(returncode, output, state):
    assert parse_cloud_init_status(returncode, output) == state


@pytest.mark.parametrize(
    ("text", "boot_id"),
    [
        ("6f0c6c2e-3c51-4a0a-9d0e-2b7a1f9e4c11\n", "6f0c6c2e-3c51-4a0a-9d0e-2b7a1f9e4c11"),
        ("6F0C6C2E-3C51-4A0A-9D0E-2B7A1F9E4C11", "6f0c6c2e-3c51-4a0a-9d0e-2b7a1f9e4c11"),
        ("", None),
        (None, None),
        ("6f0c6c2e-3c51", None),
        ("not-a-uuid", None),
    ],
)
def test_a_boot_id_must_read_as_a_uuid(text, boot_id):
    assert parse_boot_id(text) == boot_id


def test_meminfo_and_cpuinfo():
    assert parse_meminfo_mib("MemTotal:       528209920 kB\nMemFree: 1 kB\n") == 528209920 // 1024
    assert parse_meminfo_mib("garbage") == 0
    model, count = parse_cpuinfo(
        "processor\t: 0\nmodel name\t: AMD EPYC 7742\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7742\n"
    )
    assert (model, count) == ("AMD EPYC 7742", 2)
    assert parse_cpuinfo("processor\t: 0\nBogoMIPS\t: 50.00\n") == (None, 1)  # aarch64


def test_df_posix_output():
    text = (
        "Filesystem         1-blocks        Used   Available Capacity Mounted on\n"
        "/dev/vda       270553174016 23345983488 85598310400      22% /\n"
        "/dev/vdb       1000 10 990 1% /var\n"
        "df: /opt: No such file or directory\n"
    )
    assert [(f.path, f.free_bytes) for f in parse_df(text)] == [("/", 85598310400), ("/var", 990)]


@pytest.mark.parametrize(
    ("text", "speed"), [("25000\n", 25000), ("-1\n", None), ("", None), (None, None), ("x", None)]
)
def test_nic_speed(text, speed):
    assert parse_speed(text) == speed


@pytest.mark.parametrize(
    ("text", "value"),
    [("0x10de\n", "10de"), ("0x030200\n", "030200"), ("0x0\n", "0000"), ("zz", None), (None, None)],
)
def test_sysfs_hex_ids(text, value):
    digits = 6 if value == "030200" else 4
    assert parse_hex_id(text, digits) == value


def test_rpm_query_lines_keep_the_installed_packages():
    text = (
        "kmod-nvidia-open-dkms\t580.95.05-1.el9\tii \n"
        "kernel-devel\t5.14.0-570.12.1.el9_6\tii \n"
        "malformed line\n"
    )
    names = [p.name for p in parse_package_list(text)]
    assert names == ["kernel-devel", "kmod-nvidia-open-dkms"]


def test_pip_index_versions_output():
    text = (
        "torch (2.15.0)\nAvailable versions: 2.15.0, 2.14.1, 2.14.0, 2.13.0\n  INSTALLED: 2.14.1\n"
    )
    assert parse_pip_index_versions(text) == ("2.15.0", "2.14.1", "2.14.0", "2.13.0")
    assert parse_pip_index_versions("ERROR: No matching distribution found for torch\n") == ()


def test_nvml_values_are_normalised():
    assert normalise_bus_id("00000000:1B:00.0") == "0000:1b:00.0"
    assert cuda_version_text(12040) == "12.4"
    assert cuda_version_text(13000) == "13.0"


def test_system_pci_ids_nvidia_section():
    text = "10de  NVIDIA Corporation\n\t2330  GH100 [H100 SXM5 80GB]\n\t\t10de 16c1  H100 SXM5\n10df  Emulex\n\t2330  Other\n"
    assert parse_pci_ids_nvidia(text) == {"2330": "GH100 [H100 SXM5 80GB]"}


def test_query_index_reports_versions_or_the_error():
    from gpuwizard.machine.detect.online import query_index
    from gpuwizard.machine.host import Output

    def answers(text: str, code: int = 0):
        return lambda argv, timeout_s=10.0: Output(
            code, text, "" if code == 0 else "ERROR: could not connect\n"
        )

    ok = query_index(answers("torch (2.16.0)\nAvailable versions: 2.16.0, 2.15.0\n"))
    assert ok.versions == ("2.16.0", "2.15.0") and ok.error is None
    failed = query_index(answers("", 1))
    assert failed.versions == () and failed.error == "ERROR: could not connect"
