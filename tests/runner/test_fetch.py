"""gpuwizard-fetch against a real local HTTPS server: only https, no redirect that leaves it,
every file checked against its pin (a SHA-256, a key's one primary key and its fingerprint), a
refused file deleted, an UNCONFIRMED one fetched with a warning (issues 14 and 19)."""

from __future__ import annotations

import datetime
import hashlib
import http.server
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from gpuwizard.runner.fetch import main
from gpuwizard.runner.keycheck import armor, checked_key, dearmor

KEY = Path(__file__).parent / "keys" / "nvidia-docker-gpgkey.asc"
KEY_B = KEY.with_name("test-key-b.asc")
"""A second key (made for these tests, public part only)."""
NVIDIA_OPEN_SOURCE = "C95B321B61E88C1809C4F759DDCAE044F796ECB0"
BODY = b"#!/bin/sh\necho installer\n"


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (the test's own CA, trusted through SSL_CERT_FILE)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


class Server:
    """An HTTPS server and a plain HTTP one, serving the same routes."""

    def __init__(self, folder: Path) -> None:
        self.routes: dict[str, tuple[int, bytes, dict[str, str]]] = {}
        routes = self.routes

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                code, body, headers = routes.get(self.path, (404, b"", {}))
                self.send_response(code)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        cert, key = self_signed(folder)
        self.cert = cert
        self.https = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.https.socket = context.wrap_socket(self.https.socket, server_side=True)
        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        for server in (self.https, self.http):
            threading.Thread(target=server.serve_forever, daemon=True).start()

    def url(self, path: str, scheme: str = "https") -> str:
        server = self.https if scheme == "https" else self.http
        return f"{scheme}://127.0.0.1:{server.server_address[1]}{path}"

    def serve(self, path: str, body: bytes) -> str:
        self.routes[path] = (200, body, {})
        return self.url(path)

    def redirect(self, path: str, to: str) -> str:
        self.routes[path] = (302, b"", {"Location": to})
        return self.url(path)

    def close(self) -> None:
        for server in (self.https, self.http):
            server.shutdown()
            server.server_close()


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    running = Server(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(running.cert))
    yield running
    running.close()


def fetch(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_file_matching_its_pin_is_saved_and_said_verified(server, tmp_path, capsys):
    url = server.serve("/installer.sh", BODY)
    dest = tmp_path / "out" / "installer.sh"
    code, out, _ = fetch(capsys, url, str(dest), "--sha256", hashlib.sha256(BODY).hexdigest())
    assert code == 0
    assert dest.read_bytes() == BODY
    assert dest.stat().st_mode & 0o777 == 0o644
    assert "SHA-256 verified against gpuwizard's pin" in out


def test_a_file_already_here_that_matches_its_pin_is_kept_without_a_download(
    server, tmp_path, capsys
):
    """What was fetched ahead (runner/prefetch.py) is used: no second download."""
    url = server.serve("/installer.sh", BODY)
    dest = tmp_path / "installer.sh"
    pin = hashlib.sha256(BODY).hexdigest()
    assert fetch(capsys, url, str(dest), "--sha256", pin)[0] == 0
    server.routes.clear()  # the server has nothing now: only the file already here can serve

    code, out, _ = fetch(capsys, url, str(dest), "--sha256", pin)

    assert code == 0 and f"kept {dest}: already here" in out
    dest.write_bytes(b"altered" + BODY)  # a file that does not match is fetched again, checked
    server.serve("/installer.sh", BODY)
    code, out, _ = fetch(capsys, url, str(dest), "--sha256", pin)
    assert code == 0 and "kept" not in out and dest.read_bytes() == BODY


def test_a_file_not_matching_its_pin_is_deleted_and_fails(server, tmp_path, capsys):
    url = server.serve("/installer.sh", BODY)
    dest = tmp_path / "installer.sh"
    code, _, err = fetch(capsys, url, str(dest), "--sha256", "0" * 64)
    assert code == 1
    assert "SHA-256 mismatch" in err and "the file was deleted and not used" in err
    assert list(tmp_path.glob("*installer*")) == [], "neither the file nor a partial one is left"


def test_plain_http_is_refused(server, tmp_path, capsys):
    server.serve("/installer.sh", BODY)
    code, _, err = fetch(
        capsys, server.url("/installer.sh", "http"), str(tmp_path / "x"), "--unpinned"
    )
    assert code == 1
    assert "is not an https URL" in err
    assert not (tmp_path / "x").exists()


def test_a_redirect_that_leaves_https_is_refused(server, tmp_path, capsys):
    server.serve("/installer.sh", BODY)
    url = server.redirect("/moved", server.url("/installer.sh", "http"))
    code, _, err = fetch(capsys, url, str(tmp_path / "x"), "--unpinned")
    assert code == 1
    assert "which is not https: refused" in err
    assert list(tmp_path.glob("*x*")) == []


def test_a_redirect_to_https_is_followed(server, tmp_path, capsys):
    server.serve("/installer.sh", BODY)
    url = server.redirect("/moved", server.url("/installer.sh"))
    code, _, _ = fetch(
        capsys, url, str(tmp_path / "x"), "--sha256", hashlib.sha256(BODY).hexdigest()
    )
    assert code == 0 and (tmp_path / "x").read_bytes() == BODY


def test_a_key_with_its_pinned_fingerprint_is_saved_dearmored(server, tmp_path, capsys):
    url = server.serve("/gpgkey", KEY.read_bytes())
    dest = tmp_path / "keyrings" / "k.gpg"
    code, out, _ = fetch(capsys, url, str(dest), "--fingerprint", NVIDIA_OPEN_SOURCE, "--dearmor")
    assert code == 0, out
    assert (
        dest.read_bytes()
        == checked_key(KEY.read_bytes(), NVIDIA_OPEN_SOURCE)
        == dearmor(KEY.read_bytes())
    )
    assert f"key fingerprint {NVIDIA_OPEN_SOURCE} verified" in out


@pytest.mark.parametrize("form", [(), ("--armor",)], ids=["--fingerprint alone", "--armor"])
def test_a_key_for_dnf_is_the_checked_key_alone_freshly_armoured(server, tmp_path, capsys, form):
    served = KEY.read_bytes().replace(b"\n\n", b"\nComment: added by the server\n\n", 1)
    url = server.serve("/gpgkey", served)
    dest = tmp_path / "RPM-GPG-KEY-x"
    assert fetch(capsys, url, str(dest), "--fingerprint", NVIDIA_OPEN_SOURCE, *form)[0] == 0
    assert dest.read_bytes() == armor(dearmor(KEY.read_bytes())) == KEY.read_bytes()


@pytest.mark.parametrize(
    "trouble",
    [
        "another key",
        "a second key appended",
        "a second armoured block",
        "text after the block",
        "not a key at all",
    ],
)
@pytest.mark.parametrize("form", ["--dearmor", "--armor"])
def test_anything_but_exactly_the_pinned_key_is_refused_and_deleted(
    server, tmp_path, capsys, trouble, form
):
    """Key A then key B passed the check for A, and without --dearmor the file was installed
    whole; dnf imports every key in a gpgkey file (issue 28)."""
    binary = dearmor(KEY.read_bytes())
    body = {
        "another key": binary,
        "a second key appended": binary + dearmor(KEY_B.read_bytes()),
        "a second armoured block": KEY.read_bytes() + KEY_B.read_bytes(),
        "text after the block": KEY.read_bytes() + b"trailing words\n",
        "not a key at all": BODY,
    }[trouble]
    pinned = "A" * 40 if trouble == "another key" else NVIDIA_OPEN_SOURCE
    url = server.serve("/gpgkey", body)
    code, _, err = fetch(capsys, url, str(tmp_path / "k.gpg"), "--fingerprint", pinned, form)
    assert code == 1, err
    assert list(tmp_path.glob("*k.gpg*")) == []


@pytest.mark.parametrize("form", ["--dearmor", "--armor"])
def test_an_unconfirmed_key_is_fetched_as_one_key_and_stored_alone(server, tmp_path, capsys, form):
    """Debian 13's and Ubuntu 26.04's plans run --unpinned --dearmor (no fingerprint could be
    confirmed); it was refused outright, so their add-cuda-repo step always failed (issue 28)."""
    url = server.serve("/8793F200.pub", KEY.read_bytes())
    dest = tmp_path / "cuda-archive-keyring.gpg"
    code, out, err = fetch(capsys, url, str(dest), "--unpinned", form)
    assert code == 0, err
    stored = dearmor(KEY.read_bytes())
    assert dest.read_bytes() == (stored if form == "--dearmor" else armor(stored))
    assert "one key, kept alone" in out and "UNCONFIRMED" in err

    two = server.serve("/two.pub", KEY.read_bytes() + KEY_B.read_bytes())
    code, _, err = fetch(capsys, two, str(tmp_path / "two.gpg"), "--unpinned", form)
    assert code == 1 and "one key per key file" in err
    assert not (tmp_path / "two.gpg").exists()


def test_a_key_form_is_for_keys_only(server, tmp_path, capsys):
    url = server.serve("/installer.sh", BODY)
    digest = hashlib.sha256(BODY).hexdigest()
    code, _, err = fetch(capsys, url, str(tmp_path / "x"), "--sha256", digest, "--armor")
    assert code == 1 and "are for keys" in err
    assert not (tmp_path / "x").exists()


def test_without_a_pin_nothing_is_fetched_and_unconfirmed_files_warn(server, tmp_path, capsys):
    url = server.serve("/installer.sh", BODY)
    code, _, err = fetch(capsys, url, str(tmp_path / "x"))
    assert code == 1 and "give exactly one of --sha256, --fingerprint and --unpinned" in err
    assert not (tmp_path / "x").exists()

    code, out, err = fetch(capsys, url, str(tmp_path / "x"), "--unpinned")
    assert code == 0 and (tmp_path / "x").read_bytes() == BODY
    assert "NOT verified: no pinned checksum (UNCONFIRMED)" in out
    assert "WARNING" in err and "trusted on HTTPS to 127.0.0.1 alone" in err
