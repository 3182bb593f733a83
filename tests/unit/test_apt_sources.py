"""apt's sources and apt-cache policy, parsed from the text the tools write."""

from __future__ import annotations

import pytest

from gpuwizard.core.facts import AptSource
from gpuwizard.core.version import kernel_flavour
from gpuwizard.machine.detect.apt_sources import (
    header_packages,
    parse_deb822,
    parse_one_line,
    parse_policy,
)
from gpuwizard.machine.detect.config import _NVIDIA_KO

DEBIAN_13 = """Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie trixie-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

# the security suite, as the installer writes it
Types: deb deb-src
URIs: http://deb.debian.org/debian-security
# a comment inside the stanza
Suites: trixie-security
Components: main non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://example.invalid/off
Suites: trixie
Components: main
Enabled: no
"""


def test_deb822_stanzas_give_one_source_per_uri_and_suite():
    assert parse_deb822(DEBIAN_13) == (
        AptSource("http://deb.debian.org/debian", "trixie", ("main",)),
        AptSource("http://deb.debian.org/debian", "trixie-updates", ("main",)),
        AptSource(
            "http://deb.debian.org/debian-security",
            "trixie-security",
            ("main", "non-free-firmware"),
        ),
    )


def test_one_line_sources_skip_deb_src_comments_and_options():
    text = (
        "deb [arch=amd64 signed-by=/usr/share/keyrings/x.gpg] http://a bookworm main contrib\n"
        "# deb http://b bookworm main\ndeb-src http://c bookworm main\n"
        "deb http://d bookworm-security main # trailing comment\n"
    )
    assert parse_one_line(text) == (
        AptSource("http://a", "bookworm", ("main", "contrib")),
        AptSource("http://d", "bookworm-security", ("main",)),
    )


POLICY = """linux-headers-6.1.0-37-cloud-amd64:
  Installed: (none)
  Candidate: (none)
  Version table:
linux-headers-cloud-amd64:
  Installed: (none)
  Candidate: 6.1.192-3
  Version table:
     6.1.192-3 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
"""


def test_policy_names_what_apt_knows_and_what_it_can_install():
    known, offered = parse_policy(POLICY)
    assert known == ("linux-headers-6.1.0-37-cloud-amd64", "linux-headers-cloud-amd64")
    assert offered == ("linux-headers-cloud-amd64",)
    assert parse_policy("") == ((), ())


@pytest.mark.parametrize(
    ("release", "flavour"),
    [
        ("6.1.0-57-cloud-amd64", "cloud-amd64"),
        ("6.12.118+deb13-cloud-amd64", "cloud-amd64"),
        ("6.1.0-57-amd64", "amd64"),
        ("5.15.0-126-generic", "generic"),
        ("6.8.0-1029-aws", "aws"),
        ("5.14.0-570.17.1.el9_6.x86_64", None),
        ("6.6.87.2-microsoft-standard-WSL2", None),
    ],
)
def test_kernel_flavour_names_the_metapackage(release, flavour):
    assert kernel_flavour(release) == flavour


def test_header_packages_ask_for_each_kernel_then_each_flavour_once():
    assert header_packages(("6.1.0-37-cloud-amd64", "6.1.0-57-cloud-amd64")) == (
        "linux-headers-6.1.0-37-cloud-amd64",
        "linux-headers-6.1.0-57-cloud-amd64",
        "linux-headers-cloud-amd64",
    )


@pytest.mark.parametrize(
    "name",
    ["nvidia.ko", "nvidia.ko.zst", "nvidia.ko.xz", "nvidia-current.ko", "nvidia-current-open.ko",
     "nvidia-tesla-535.ko", "nvidia-tesla-535-open.ko.xz", "nvidia-legacy-390xx.ko"],
)  # fmt: skip
def test_every_distribution_s_name_of_the_driver_module_is_the_driver(name):
    assert _NVIDIA_KO.match(name)


@pytest.mark.parametrize(
    "name",
    [
        "nvidia-uvm.ko",
        "nvidia-current-uvm.ko",
        "nvidia-modeset.ko.zst",
        "nvidia-current-drm.ko",
        "nvidia-peermem.ko",
    ],
)
def test_the_driver_s_other_modules_are_not(name):
    assert not _NVIDIA_KO.match(name)
