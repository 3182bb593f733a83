"""Detection on this machine agrees with the system's own tools, which it no longer runs.

Detection reads dpkg's files instead of spawning dpkg-query, apt-mark and dpkg --audit (about
a second saved); on a Debian-family machine (CI's) the tools themselves are the reference.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpuwizard.machine.detect import detect_host, local_host
from gpuwizard.machine.detect.installs import PACKAGE_PATTERNS, read_dpkg
from gpuwizard.machine.dpkgdb import STATUS

pytestmark = pytest.mark.skipif(
    not (shutil.which("dpkg-query") and Path(STATUS).exists()),
    reason="not a dpkg machine: no reference to compare with",
)


def tool(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=False).stdout


def test_installed_packages_are_what_dpkg_query_lists() -> None:
    out = tool("dpkg-query", "-W", "-f=${Package}\t${Version}\t${db:Status-Abbrev}\n")
    expected = {
        (name, version)
        for name, version, abbrev in (line.split("\t") for line in out.splitlines())
        if abbrev[1] == "i"  # the status letter: installed
    }
    assert set(read_dpkg(local_host()).installed(("*",))) == expected


def test_holds_and_an_interrupted_dpkg_are_what_apt_mark_and_dpkg_audit_say() -> None:
    facts = detect_host(local_host())
    assert facts.installs.held_packages == tuple(sorted(tool("apt-mark", "showhold").split()))
    assert facts.boot.dpkg_interrupted == bool(tool("dpkg", "--audit").strip())


def test_the_packages_detection_reports_match_its_patterns() -> None:
    facts = detect_host(local_host())
    names = {p.name for p in facts.installs.packages}
    out = tool("dpkg-query", "-W", "-f=${Package}\t${db:Status-Abbrev}\n", *PACKAGE_PATTERNS)
    listed = {line.split("\t")[0] for line in out.splitlines() if line.split("\t")[1][1] == "i"}
    assert names == listed
