"""The playbook's downloader (runner/httpsget.py, carried as text by playbook.yml) against a real
local HTTPS server: only https, and a redirect that leaves it is refused (issue 28).

Ansible's get_url followed a redirect from https to plain http for the unpinned Miniforge
installer, which then ran as root; the README promises that a redirect leaving https is
refused. It is run here as the playbook runs it: ``python3 -I -c TEXT URL DEST [SHA256]``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuwizard.export.ansible_tasks import HTTPSGET
from tests.runner.test_fetch import BODY, Server


@pytest.fixture
def https(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    """test_fetch's HTTPS (and plain HTTP) server, its certificate trusted via SSL_CERT_FILE."""
    running = Server(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(running.cert))
    yield running
    running.close()


def httpsget(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-c", HTTPSGET.read_text(encoding="utf-8"), *args],
        capture_output=True,
        text=True,
        env={**os.environ},  # SSL_CERT_FILE (the fixture's): -I ignores only PYTHON* variables
        timeout=60,
        check=False,
    )


def test_a_redirect_that_leaves_https_is_refused_and_nothing_kept(
    https: Server,
    tmp_path: Path,
) -> None:
    https.serve("/Miniforge3.sh", BODY)
    url = https.redirect("/latest", https.url("/Miniforge3.sh", "http"))
    folder = tmp_path / "downloads"
    folder.mkdir()
    done = httpsget(url, str(folder / "Miniforge3.sh"))
    assert done.returncode == 1
    assert "which is not https: refused" in done.stderr and done.stderr.count("\n") == 1
    assert list(folder.iterdir()) == [], "neither the file nor a partial one"


def test_plain_http_is_refused(https: Server, tmp_path: Path) -> None:
    https.serve("/x", BODY)
    done = httpsget(https.url("/x", "http"), str(tmp_path / "x"))
    assert done.returncode == 1 and "not an https URL" in done.stderr


def test_a_redirect_to_https_is_followed_and_the_pin_checked(https: Server, tmp_path: Path) -> None:
    https.serve("/uv.whl", BODY)
    url = https.redirect("/files/uv.whl", https.url("/uv.whl"))
    good = hashlib.sha256(BODY).hexdigest()
    done = httpsget(url, str(tmp_path / "uv.whl"), good)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "uv.whl").read_bytes() == BODY
    assert (tmp_path / "uv.whl").stat().st_mode & 0o777 == 0o644

    bad = httpsget(url, str(tmp_path / "other.whl"), "0" * 64)
    assert bad.returncode == 1 and "SHA-256 mismatch" in bad.stderr
    assert not (tmp_path / "other.whl").exists()


def test_the_playbook_and_gpuwizard_fetch_refuse_the_same_redirects() -> None:
    from gpuwizard.runner import fetch, httpsget

    assert fetch.HttpsOnly is httpsget.HttpsOnly
