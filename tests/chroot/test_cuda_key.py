"""Quick chroot tier: Debian 13's add-cuda-repo step, for real, in a real Debian 13 root (issue 28).

Debian 13's CUDA key has no confirmed fingerprint (UNCONFIRMED), so its plan fetches it with
``--unpinned --dearmor``. gpuwizard-fetch refused that pair outright, so the step always
failed; deploy.sh ignored ``--dearmor`` without a fingerprint and stored the armoured key as a
``.gpg`` keyring. NVIDIA's servers cannot be reached from here, so a local HTTPS stand-in
serves ``developer.download.nvidia.com`` to the root (its /etc/hosts, a test CA it trusts): a
key (a throwaway one made here, not NVIDIA's) and a flat repository signed with it. The plan's
own key step then runs: gpuwizard-fetch with the plan's options, and the exported deploy.sh in
the root, started from a folder with planted Python modules; apt itself must then verify the
repository's InRelease against the key that was stored. What this cannot show: that NVIDIA's
real debian13 key file is one key (it is checked, unpinned, when it is downloaded).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import gzip
import hashlib
import http.server
import ipaddress
import os
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from email.utils import format_datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from gpuwizard.core.ops import AptUpdate, Download, NoPin
from gpuwizard.core.plan import SCHEMA, Plan, WriteFile
from gpuwizard.core.request import SetupRequest
from gpuwizard.export.bash import render_bash
from gpuwizard.export.source import ExportSource
from gpuwizard.runner.fetch import main as fetch_main
from gpuwizard.runner.keycheck import dearmor, primary_fingerprints
from tests.chroot import roots
from tests.chroot.conftest import T4, not_checked, timed, unavailable
from tests.chroot.drive import Planned, plan_on
from tests.chroot.machine import ChrootMachine, create_machine, remove_machine
from tests.conftest import profile_dir

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

NVIDIA = "developer.download.nvidia.com"
LOCAL = "127.0.0.2"
"""NVIDIA's name in the root's /etc/hosts; a loopback address nothing else here listens on."""
REPO = "/compute/cuda/repos/debian13/x86_64"
KEYRING = "/usr/share/keyrings/cuda-archive-keyring.gpg"
PLANTED = ("base64.py", "hashlib.py", "zipfile.py", "tempfile.py", "venv/__init__.py")


# ------------------------------------------------------------------ NVIDIA's stand-in
def certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A test CA, and a certificate it signed for NVIDIA's name and the local address."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpuwizard test CA")])
    now = datetime.datetime.now(datetime.timezone.utc)
    valid = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(hours=2))
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(valid[0]).not_valid_after(valid[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName(NVIDIA), x509.IPAddress(ipaddress.ip_address(LOCAL))]
    leaf = (
        x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, NVIDIA)]))
        .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(valid[0]).not_valid_after(valid[1])
        .add_extension(x509.SubjectAlternativeName(names), False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    ca_file, cert_file, key_file = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca_file, cert_file, key_file


def gpg(home: Path, *args: str, data: bytes | None = None) -> bytes:
    done = subprocess.run(
        ["gpg", "--homedir", str(home), "--batch", "--yes", "--pinentry-mode", "loopback", "--passphrase", "", *args],
        input=data, capture_output=True, check=True, timeout=120,
    )  # fmt: skip
    return done.stdout


def signed_repository(folder: Path, home: Path) -> bytes:
    """A flat apt repository (no packages) signed with a new key; returns the key, armoured."""
    home.mkdir(mode=0o700)
    gpg(
        home,
        "--quick-gen-key",
        "gpuwizard chroot test (throwaway) <t@gpuwizard.invalid>",
        "ed25519",
        "sign",
        "1d",
    )
    repo = folder / REPO.lstrip("/")
    repo.mkdir(parents=True)
    (repo / "Packages").write_bytes(b"")
    (repo / "Packages.gz").write_bytes(gzip.compress(b"", mtime=0))
    lines = [
        "Origin: gpuwizard-test", "Label: gpuwizard-test",
        f"Date: {format_datetime(datetime.datetime.now(datetime.timezone.utc), usegmt=True)}",
        "SHA256:",
    ]  # fmt: skip
    for name in ("Packages", "Packages.gz"):
        data = (repo / name).read_bytes()
        lines.append(f" {hashlib.sha256(data).hexdigest()} {len(data)} {name}")
    release = ("\n".join(lines) + "\n").encode()
    (repo / "InRelease").write_bytes(
        gpg(home, "--clearsign", "--digest-algo", "SHA512", data=release)
    )
    key = gpg(home, "--armor", "--export")
    (repo / "8793F200.pub").write_bytes(key)
    return key


class Stand_in:
    def __init__(self, folder: Path, cert: Path, key: Path) -> None:
        files = folder

        class Handler(http.server.SimpleHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # apt keeps its connection; each reply has a length

            def __init__(self, *args: object, **kwargs: object) -> None:
                super().__init__(*args, directory=str(files), **kwargs)  # type: ignore[arg-type]

            def log_message(self, *args: object) -> None:
                pass

        class Server(http.server.ThreadingHTTPServer):
            def shutdown_request(self, request: object) -> None:
                # TLS's close_notify first: OpenSSL 3 (apt's) takes a bare close for truncation
                with contextlib.suppress(OSError, ValueError):
                    request.unwrap()  # type: ignore[attr-defined]
                super().shutdown_request(request)  # type: ignore[arg-type]

        self.server = Server((LOCAL, 443), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def trixie(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ChrootMachine, bytes, Path]]:
    """A Debian 13 machine that reaches the stand-in as NVIDIA's server, and the key it serves."""
    if os.geteuid() != 0:
        unavailable("it needs root (mmdebstrap, chroot, mounts)")
    try:
        with timed("Debian 13 root: cached tarball ready (built when missing)"):
            archive = roots.tarball("trixie")
    except roots.RootUnavailable as error:
        unavailable(str(error))
    not_checked(
        "NVIDIA's debian13 CUDA key and repository",
        f"{NVIDIA} cannot be reached from here: a local stand-in served a throwaway key and an "
        "empty repository signed with it, under NVIDIA's name and paths",
    )
    folder = tmp_path_factory.mktemp("cuda-key")
    with timed("cuda key: Debian 13 root unpacked and prepared"):
        machine = create_machine(folder / "m", archive, profile_dir(T4))
    served = folder / "served"
    ca, cert, key_file = certificates(folder)
    key = signed_repository(served, folder / "gnupg")
    stand_in = Stand_in(served, cert, key_file)
    shutil.copy(ca, machine.path("/usr/local/share/ca-certificates/gpuwizard-test-ca.crt"))
    machine.run(["update-ca-certificates"], check=True, timeout_s=120)
    with machine.path("/etc/hosts").open("a") as hosts:
        hosts.write(f"{LOCAL} {NVIDIA}\n")
    try:
        yield machine, key, ca
    finally:
        stand_in.close()
        remove_machine(machine)


def key_step(machine: ChrootMachine) -> tuple[Planned, Download]:
    """The plan's own add-cuda-repo step on this Debian 13 root (cuDNN asks for the repository)."""
    planned = plan_on(machine, SetupRequest(cudnn=True))
    step = next((s for s in planned.plan.steps if s.id == "add-cuda-repo"), None)
    assert step is not None, [s.id for s in planned.plan.steps]
    fetch, entry, update = step.actions
    assert (
        isinstance(fetch, Download)
        and isinstance(entry, WriteFile)
        and isinstance(update, AptUpdate)
    )
    assert fetch.url == f"https://{NVIDIA}{REPO}/8793F200.pub"
    assert fetch.check == NoPin() and fetch.dearmor, "UNCONFIRMED: --unpinned --dearmor"
    plan = Plan(SCHEMA, (step,), planned.plan.summary)
    return dataclasses.replace(planned, plan=plan), fetch


def apt_update_verifies(machine: ChrootMachine) -> None:
    done = machine.run(
        ["apt-get", "-q", "update"], env={"DEBIAN_FRONTEND": "noninteractive"}, timeout_s=600
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-3000:]
    assert f"https://{NVIDIA}{REPO}" in said and "InRelease" in said
    assert "NO_PUBKEY" not in said and "not signed" not in said and "W: " not in said, said[-3000:]


def test_gpuwizard_fetch_stores_debian_13_s_unconfirmed_key_as_one_binary_key(
    trixie: tuple[ChrootMachine, bytes, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner's downloader, with the plan's exact options (it runs outside the root in this
    tier, so it reaches the stand-in by its address); apt then verifies with what it stored."""
    machine, key, ca = trixie
    planned, fetch = key_step(machine)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    local = fetch.url.replace(NVIDIA, LOCAL)
    with timed("cuda key: gpuwizard-fetch --unpinned --dearmor"):
        code = fetch_main([local, str(machine.path(fetch.dest)), *fetch.options()])
    assert code == 0, "Debian 13's key step failed outright before issue 28"
    stored = machine.path(KEYRING).read_bytes()
    assert stored == dearmor(key) and len(primary_fingerprints(stored)) == 1
    entry = planned.plan.steps[0].actions[1]
    assert isinstance(entry, WriteFile)
    machine.path(entry.path).write_text(entry.content)
    with timed("cuda key: apt-get update against the stand-in (runner's keyring)"):
        apt_update_verifies(machine)
    machine.path(entry.path).unlink()
    machine.path(KEYRING).unlink()


def test_deploy_sh_runs_debian_13_s_key_step_from_a_planted_folder(
    trixie: tuple[ChrootMachine, bytes, Path],
) -> None:
    """deploy.sh's own gw_fetch (curl and the key check in the root's python3), started from a
    folder with planted modules: one binary key is stored, apt verifies with it, nothing planted
    ran."""
    machine, key, _ = trixie
    planned, _ = key_step(machine)
    source = ExportSource(planned.plan, planned.selection, planned.facts, version="0.1.0")
    machine.path("/root/deploy.sh").write_text(render_bash(source))
    planted = machine.path("/srv/shared")
    for name in PLANTED:
        module = planted / name
        module.parent.mkdir(parents=True, exist_ok=True)
        module.write_text("open('/srv/planted-ran', 'a').write(__name__ + '\\n')\n")
    os.chown(planted, 65534, 65534)
    with timed("cuda key: deploy.sh's add-cuda-repo (curl installed first)"):
        # --force: the root shows its recorded GPU to detection, not on its /sys PCI bus
        script = "cd /srv/shared && bash /root/deploy.sh --force"
        done = machine.run(["bash", "-c", script], timeout_s=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "UNCONFIRMED" in done.stdout + done.stderr
    assert machine.path(KEYRING).read_bytes() == dearmor(key), "binary, as signed-by reads it"
    assert not machine.path("/srv/planted-ran").exists(), machine.path(
        "/srv/planted-ran"
    ).read_text()
    with timed("cuda key: apt-get update against the stand-in (deploy.sh's keyring)"):
        apt_update_verifies(machine)
