"""tools/bootstrap.sh on this machine, up to its first download: what it runs from the caller's
folder, and how a failed download, a refused certificate or a missing python3 end (one line).

The uv path (GPUWIZARD_FORCE_UV) is taken so that nothing here installs anything: the index is a
local HTTPS server (a throwaway certificate) or a closed port. The whole install, the apt-get
path and uv's own downloads run in real Debian roots: tests/chroot/test_bootstrap.py.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

BOOTSTRAP = Path(__file__).resolve().parents[2] / "tools" / "bootstrap.sh"
CLOSED = "https://127.0.0.1:9/simple"
PLANTED = (
    "hashlib", "json", "zipfile", "tempfile", "stat", "venv", "ensurepip", "ssl", "shutil", "pip",
)  # fmt: skip
"""Modules the downloader, ``-m venv`` and ``-m pip`` import: planted in the caller's folder."""


def plant(folder: Path, marks: Path) -> None:
    """Modules named like the standard library's (and urllib as a package) that leave a mark."""
    body = "import pathlib\npathlib.Path({mark!r}).write_text('ran')\n"
    for name in PLANTED:
        (folder / f"{name}.py").write_text(body.format(mark=str(marks / name)))
    (folder / "urllib").mkdir()
    (folder / "urllib" / "__init__.py").write_text(body.format(mark=str(marks / "urllib")))


def bootstrap(
    tmp_path: Path, env: Mapping[str, str], cwd: Path | None = None, path: str | None = None
) -> subprocess.CompletedProcess[str]:
    base = {
        "PATH": path or os.environ["PATH"],
        "HOME": str(tmp_path / "home"),
        "GPUWIZARD_PREFIX": str(tmp_path / "prefix"),
        "GPUWIZARD_BIN_DIR": str(tmp_path / "bin"),
        "GPUWIZARD_FORCE_UV": "1",
        "LANG": "C.UTF-8",
    }
    return subprocess.run(
        ["bash", str(BOOTSTRAP)],
        cwd=cwd or tmp_path,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_modules_planted_in_the_callers_folder_never_run(tmp_path):
    folder, marks = tmp_path / "shared-folder", tmp_path / "marks"
    folder.mkdir()
    marks.mkdir()
    plant(folder, marks)
    done = bootstrap(tmp_path, {"PIP_INDEX_URL": CLOSED}, cwd=folder)
    assert sorted(p.name for p in marks.iterdir()) == [], done.stderr
    assert done.returncode == 1
    assert "could not download" in done.stderr, "the downloader ran (and failed on the closed port)"


def test_a_refused_connection_is_one_line_naming_the_address(tmp_path):
    done = bootstrap(tmp_path, {"PIP_INDEX_URL": CLOSED})
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"bootstrap: could not download {CLOSED}/uv/: ")
    assert "Connection refused" in lines[0]
    assert "Traceback" not in done.stderr and "line " not in done.stderr


def test_a_prefix_this_run_created_is_removed_when_it_fails(tmp_path):
    done = bootstrap(tmp_path, {"PIP_INDEX_URL": CLOSED})
    assert done.returncode == 1
    assert not (tmp_path / "prefix").exists()
    assert done.stderr.splitlines()[-1] == (
        f"bootstrap: uv was not installed (removed {tmp_path / 'prefix'}, which this run had created)"
    )


def test_a_prefix_that_was_there_before_is_kept(tmp_path):
    (tmp_path / "prefix").mkdir()
    (tmp_path / "prefix" / "mine").write_text("")
    done = bootstrap(tmp_path, {"PIP_INDEX_URL": CLOSED})
    assert done.returncode == 1
    assert (tmp_path / "prefix" / "mine").exists()
    assert f"nothing outside {tmp_path / 'prefix'} was changed" in done.stderr


# ----------------------------------------------------------------- a local HTTPS package index
class Index:
    """A PEP 691 index on 127.0.0.1 over HTTPS with a throwaway certificate."""

    def __init__(self, folder: Path) -> None:
        self.cert = folder / "index.pem"
        key = folder / "index.key"
        subprocess.run(
            [
                "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                "-keyout", str(key), "-out", str(self.cert),
            ],
            check=True, capture_output=True,
        )  # fmt: skip
        self.pages: dict[str, tuple[int, bytes]] = {}
        pages = self.pages

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, body = pages.get(self.path, (404, b"not here"))
                self.send_response(status)
                if status in (301, 302):  # the body is where it points
                    self.send_header("Location", body.decode())
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                del args

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    """Each test that asks for it is slow: a certificate made, a server started."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a certificate")
    served = Index(tmp_path)
    yield served
    served.server.shutdown()


@pytest.mark.slow
def test_a_certificate_the_system_store_refuses_is_one_line_with_the_likely_cause(tmp_path, index):
    empty = tmp_path / "no-ca"
    empty.mkdir()
    env = {"PIP_INDEX_URL": f"{index.url}/simple", "SSL_CERT_FILE": str(empty / "none.pem"), "SSL_CERT_DIR": str(empty)}  # fmt: skip
    done = bootstrap(tmp_path, env)
    assert done.returncode == 1
    first = done.stderr.splitlines()[0]
    assert first.startswith(f"bootstrap: could not download {index.url}/simple/uv/: ")
    assert "CERTIFICATE_VERIFY_FAILED" in first and "re-signs TLS" in first
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_an_http_error_is_one_line(tmp_path, index):
    done = bootstrap(
        tmp_path, {"PIP_INDEX_URL": f"{index.url}/simple", "SSL_CERT_FILE": str(index.cert)}
    )
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == (
        f"bootstrap: could not download {index.url}/simple/uv/: HTTP 404 Not Found"
    )


@pytest.mark.slow
def test_a_redirect_that_leaves_https_is_refused(tmp_path, index):
    index.pages["/simple/uv/"] = (302, b"http://127.0.0.1:9/simple/uv/")
    done = bootstrap(
        tmp_path, {"PIP_INDEX_URL": f"{index.url}/simple", "SSL_CERT_FILE": str(index.cert)}
    )
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == (
        f"bootstrap: could not download {index.url}/simple/uv/: "
        "redirected to http://127.0.0.1:9/simple/uv/, which is not https"
    )


@pytest.mark.slow
def test_a_wheel_whose_sha256_is_not_the_pinned_one_is_not_used(tmp_path, index):
    wheel = "uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
    listing = {"files": [{"filename": wheel, "url": f"{index.url}/files/{wheel}"}]}
    index.pages["/simple/uv/"] = (200, json.dumps(listing).encode())
    index.pages[f"/files/{wheel}"] = (200, b"not the real wheel")
    done = bootstrap(
        tmp_path, {"PIP_INDEX_URL": f"{index.url}/simple", "SSL_CERT_FILE": str(index.cert)}
    )
    assert done.returncode == 1
    assert "bootstrap: uv wheel SHA-256 mismatch: got " in done.stderr.splitlines()[0]
    assert not (tmp_path / "prefix").exists()


@pytest.mark.slow
def test_an_index_without_the_pinned_release_is_one_line(tmp_path, index):
    index.pages["/simple/uv/"] = (200, json.dumps({"files": []}).encode())
    done = bootstrap(
        tmp_path, {"PIP_INDEX_URL": f"{index.url}/simple", "SSL_CERT_FILE": str(index.cert)}
    )
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == (
        f"bootstrap: {index.url}/simple/uv/ lists no uv 0.13.9 wheel for manylinux_2_17_x86_64"
    )


# ------------------------------------------------------------------------------- no python3
def test_no_python3_and_no_apt_get_is_one_line_and_creates_nothing(tmp_path):
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("bash", "id", "uname", "dirname", "basename", "mkdir", "rm", "ln"):
        found = shutil.which(tool)
        assert found, tool
        (tools / tool).symlink_to(found)
    done = bootstrap(tmp_path, {"GPUWIZARD_PYTHON": "no-such-python"}, path=str(tools))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "bootstrap: no python3 at all: install python3 and python3-venv (apt-get) or python3 (dnf)"
        f" as root first, or run this as root on Debian/Ubuntu ({tmp_path / 'prefix'} was not created)"
    ]
    assert not (tmp_path / "prefix").exists()
