"""dpkg's status file, read as dpkg-query, apt-mark showhold and dpkg --audit would answer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpuwizard.machine.dpkgdb import Entry, database, parse_status, relevant, render

STATUS = """\
Package: nvidia-driver-535-server
Status: install ok installed
Priority: optional
Architecture: amd64
Version: 535.247.01-0ubuntu0.22.04.1
Description: NVIDIA driver metapackage
 A continuation line: Status: purge ok not-installed

Package: libnvidia-compute-535-server
Status: install ok installed
Architecture: amd64
Multi-Arch: same
Version: 535.247.01-0ubuntu0.22.04.1

Package: libnvidia-compute-535-server
Status: install ok installed
Architecture: i386
Multi-Arch: same
Version: 535.247.01-0ubuntu0.22.04.1

Package: nvidia-utils-535-server
Status: hold ok installed
Version: 535.247.01-0ubuntu0.22.04.1

Package: cuda-keyring
Status: deinstall ok config-files
Version: 1.1-1

Package: libc6
Status: install ok installed
Version: 2.36-9+deb12u9
"""


def test_installed_packages_are_those_dpkg_installed_held_or_not() -> None:
    db = database(STATUS, ())
    assert db.installed(("nvidia-*", "libnvidia-*", "cuda-*")) == (
        ("libnvidia-compute-535-server", "535.247.01-0ubuntu0.22.04.1"),
        ("nvidia-driver-535-server", "535.247.01-0ubuntu0.22.04.1"),
        ("nvidia-utils-535-server", "535.247.01-0ubuntu0.22.04.1"),
    )
    assert db.held == ("nvidia-utils-535-server",)
    assert not db.interrupted


def test_a_continuation_line_is_not_a_field() -> None:
    first = parse_status(STATUS)[0]
    assert (first.want, first.flag, first.state) == ("install", "ok", "installed")


def test_a_package_left_half_way_or_needing_a_reinstall_is_an_interrupted_dpkg() -> None:
    for status in (
        "install ok half-configured",
        "install ok unpacked",
        "install reinstreq half-installed",
    ):
        text = STATUS + f"\nPackage: nvidia-dkms-535-server\nStatus: {status}\nVersion: 535\n"
        db = database(text, ())
        assert db.interrupted, status
        assert ("nvidia-dkms-535-server", "535") not in db.installed(("nvidia-*",))


def test_a_journal_left_in_updates_is_an_interrupted_dpkg() -> None:
    assert database(STATUS, ("0001",)).interrupted
    assert not database(STATUS, ("tmp.i",)).interrupted


def test_no_status_file_is_an_empty_database() -> None:
    db = database("", ())
    assert db.entries == () and db.held == () and not db.interrupted


names = st.from_regex(r"[a-z0-9][a-z0-9.+-]{0,30}", fullmatch=True)
versions = st.from_regex(r"[0-9][0-9A-Za-z.+~:-]{0,20}", fullmatch=True)
entries = st.builds(
    Entry,
    names,
    versions,
    st.sampled_from(["install", "hold", "deinstall", "purge"]),
    st.sampled_from(["ok", "reinstreq"]),
    st.sampled_from(["installed", "config-files", "half-configured", "unpacked", "not-installed"]),
)


@given(st.lists(entries, max_size=20, unique_by=lambda e: e.name))
def test_render_then_parse_is_the_same_packages(given_entries: list[Entry]) -> None:
    assert sorted(parse_status(render(given_entries)), key=lambda e: e.name) == sorted(
        given_entries, key=lambda e: e.name
    )


@given(st.lists(entries, max_size=30, unique_by=lambda e: e.name))
def test_a_capture_keeps_every_stanza_detection_reads(given_entries: list[Entry]) -> None:
    patterns = ("nvidia-*", "cuda-*", "python3.1?")
    full = database(render(given_entries), ())
    kept = database(relevant(render(given_entries), patterns), ())
    assert kept.installed(patterns) == full.installed(patterns)
    assert kept.held == full.held and kept.interrupted == full.interrupted
    assert len(kept.entries) <= len(full.entries)
