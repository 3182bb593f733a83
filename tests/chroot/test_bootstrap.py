"""Quick chroot tier: getting gpuwizard onto a fresh Debian 12 and 13 as the README says.

The release archive of this working tree (tools/release.py --worktree) is checked with
``sha256sum -c`` and unpacked inside a fresh root, and ``tools/bootstrap.sh`` runs there for
real, from a folder full of planted modules named like the standard library's:

- as root on stock Debian (python3 without its venv module): python3.X-venv from Debian's
  archive, a virtual environment, gpuwizard and its dependencies from PyPI with pip; no uv;
- as a user: the pinned uv from PyPI (its SHA-256 checked), through the system certificate
  store (this network re-signs TLS, so that is tried for real where it does);
- without python3: root installs python3 and python3-venv; a user gets one line and no prefix;
- with no Python >= 3.10 uv goes for a standalone CPython: here only up to its download
  (neither Astral's mirror nor GitHub can be reached from here).

Then the installed gpuwizard runs detect and doctor in the root, which has no /sys. The roots
trust this network's CA in their system store, as a machine behind a re-signing proxy does; the
harness's own /etc/pip.conf is removed so pip relies on that store too.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.chroot import roots
from tests.chroot.conftest import T4, not_checked, timed, unavailable
from tests.chroot.machine import ChrootMachine, create_machine, remove_machine
from tests.conftest import profile_dir

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

RELEASE = Path(__file__).resolve().parents[2] / "tools" / "release.py"
PYTHON = {"bookworm": "3.11", "trixie": "3.13"}
PLANTED = ("hashlib", "json", "tempfile", "zipfile", "venv", "ensurepip", "shutil", "ssl", "pip")
SHARED = "/srv/shared"
MARKS = "/srv/marks"
USER = "alice"


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This working tree as a release archive with its SHA256SUMS: what a server downloads."""
    out = tmp_path_factory.mktemp("release")
    subprocess.run(
        [sys.executable, str(RELEASE), "--worktree", "--out", str(out)],
        check=True,
        capture_output=True,
    )
    return out


@pytest.fixture(scope="module", params=sorted(PYTHON))
def suite(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture(scope="module")
def archive(suite: str) -> Path:
    """Today's cached root of the suite (built on its first use of the day)."""
    try:
        with timed(f"{suite} root: cached tarball ready (built when missing)"):
            return roots.tarball(suite)
    except roots.RootUnavailable as error:
        unavailable(str(error))
        raise


def fresh(folder: Path, archive: Path, release: Path) -> ChrootMachine:
    """A fresh root with the release files in /srv/dl, planted modules in /srv/shared and a
    user; without the harness's pip.conf (the system store alone trusts this network)."""
    machine = create_machine(folder, archive, profile_dir(T4))
    machine.path("/etc/pip.conf").unlink()
    downloads = machine.path("/srv/dl")
    downloads.mkdir(parents=True)
    for file in release.iterdir():
        (downloads / file.name).write_bytes(file.read_bytes())
    plant = "import pathlib\npathlib.Path({!r}).write_text('ran')\n"
    for folder_in_root in (SHARED, MARKS):
        machine.path(folder_in_root).mkdir(parents=True)
    for name in PLANTED:
        machine.path(f"{SHARED}/{name}.py").write_text(plant.format(f"{MARKS}/{name}"))
    machine.path(f"{SHARED}/urllib").mkdir()
    machine.path(f"{SHARED}/urllib/__init__.py").write_text(plant.format(f"{MARKS}/urllib"))
    machine.path(SHARED).chmod(0o777)
    machine.run(["useradd", "--create-home", USER], check=True)
    return machine


def top(machine: ChrootMachine) -> str:
    (name,) = [p.name for p in machine.path("/srv/dl").glob("gpuwizard-*.tar.gz")]
    return name.removesuffix(".tar.gz")


def as_root(machine: ChrootMachine) -> subprocess.CompletedProcess[str]:
    """The README's way in without git, then bootstrap from the planted folder."""
    script = (
        f"set -e; cd /srv/dl && sha256sum -c SHA256SUMS && tar -xzf {top(machine)}.tar.gz\n"
        f"cd {SHARED} && /srv/dl/{top(machine)}/tools/bootstrap.sh"
    )
    return machine.run(["/bin/bash", "-c", script], timeout_s=1500)


def as_user(machine: ChrootMachine, env: str = "") -> subprocess.CompletedProcess[str]:
    """The user unpacks the archive into their home and runs bootstrap from the planted folder."""
    script = (
        f"set -e; cd ~ && tar -xzf /srv/dl/{top(machine)}.tar.gz\n"
        f"cd {SHARED} && {env} ~/{top(machine)}/tools/bootstrap.sh"
    )
    user = ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--init-groups"]
    return machine.run(
        [*user, "env", f"HOME=/home/{USER}", "/bin/bash", "-c", script], timeout_s=1500
    )


def said(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.startswith("bootstrap: ")]


def planted_ran(machine: ChrootMachine) -> list[str]:
    return sorted(p.name for p in machine.path(MARKS).iterdir())


@pytest.fixture(scope="module")
def rooted(tmp_path_factory, suite, archive, release):
    machine = fresh(tmp_path_factory.mktemp(f"boot-root-{suite}") / "m", archive, release)
    with timed(f"{suite}: bootstrap as root (python3.X-venv from the archive, venv, pip)"):
        done = as_root(machine)
    yield machine, done
    remove_machine(machine)


def test_as_root_on_stock_debian_the_venv_module_comes_from_the_archive(suite, rooted):
    machine, done = rooted
    python = PYTHON[suite]
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{top(machine)}.tar.gz: OK" in done.stdout, "sha256sum -c checked the archive"
    assert said(done) == [
        f"bootstrap: /usr/bin/python{python} has no venv module: installing it from the OS archive (smaller than uv)",
        f"bootstrap: installing python{python}-venv from the OS archive (apt-get)",
        f"bootstrap: using /usr/bin/python{python} (Python {python}.{patch(done, python)}) for a virtual environment in /opt/gpuwizard/venv",
        f"bootstrap: installed: /usr/local/bin/gpuwizard (Python {python}.{patch(done, python)})",
        "bootstrap: run: gpuwizard",
    ]  # fmt: skip
    assert not machine.path("/opt/gpuwizard/bin/uv").exists(), "no uv as root on Debian"
    assert planted_ran(machine) == []
    version = machine.run(["gpuwizard", "--version"], check=True)
    assert version.stdout.startswith("gpuwizard ")


def patch(done: subprocess.CompletedProcess[str], python: str) -> str:
    found = re.search(rf"\(Python {re.escape(python)}\.(\d+)\)", done.stdout)
    assert found, done.stdout
    return found.group(1)


def test_without_sys_detect_and_doctor_say_it_could_not_be_read(rooted):
    machine, done = rooted
    assert done.returncode == 0
    assert not any(machine.path("/sys").iterdir()), "the root has no /sys mounted"
    detect = machine.run(["gpuwizard", "detect"])
    assert detect.returncode == 0, detect.stderr
    assert "GPU      unknown: /sys could not be read" in detect.stdout
    assert "no NVIDIA GPU" not in detect.stdout + detect.stderr
    doctor = machine.run(["gpuwizard", "doctor"])
    assert doctor.returncode == 2, doctor.stdout + doctor.stderr
    assert "UNCHECKED  /sys could not be read" in doctor.stdout


@pytest.fixture(scope="module")
def user_machine(tmp_path_factory, suite, archive, release):
    machine = fresh(tmp_path_factory.mktemp(f"boot-user-{suite}") / "m", archive, release)
    yield machine
    remove_machine(machine)


def test_as_a_user_the_pinned_uv_builds_it_through_the_system_store(suite, user_machine):
    python = PYTHON[suite]
    with timed(f"{suite}: bootstrap as a user (uv from PyPI)"):
        done = as_user(user_machine)
    assert done.returncode == 0, done.stdout + done.stderr
    prefix = f"/home/{USER}/.local/share/gpuwizard"
    assert said(done)[:3] == [
        f"bootstrap: /usr/bin/python{python} has no venv module (as root, bootstrap would install python{python}-venv from the OS archive instead)",
        "bootstrap: fetching uv 0.13.9 for x86_64 from the package index",
        f"bootstrap: uv builds the environment in {prefix}/venv from Python /usr/bin/python{python}",
    ]  # fmt: skip
    assert said(done)[3].startswith(f"bootstrap: installed: /home/{USER}/.local/bin/gpuwizard")
    assert planted_ran(user_machine) == []
    judge_system_certificates(user_machine, prefix)


def judge_system_certificates(machine: ChrootMachine, prefix: str) -> None:
    """Whether this network needed uv's system store: uv without it, against PyPI."""
    bare = machine.run(  # in_root passes no UV_SYSTEM_CERTS: uv's bundled roots alone
        [f"{prefix}/bin/uv", "pip", "install", "--dry-run", "--no-cache", "--python",
         f"{prefix}/venv/bin/python", "six"],
    )  # fmt: skip
    if bare.returncode == 0:
        not_checked(
            "uv through the system certificate store",
            "this network does not re-sign TLS: uv's own bundle reached PyPI as well",
        )
    else:
        assert "certificate" in (bare.stdout + bare.stderr).lower(), bare.stderr[-2000:]


def test_with_no_python_3_10_uv_goes_for_a_standalone_cpython(suite, user_machine):
    """No interpreter counts (GPUWIZARD_PYTHON names none): uv's CPython download. Its address
    cannot be reached from here, so only the start and the clean failure are checked."""
    if suite != "bookworm":
        pytest.skip("the same path as on Debian 12")
    done = as_user(user_machine, env="GPUWIZARD_PYTHON=no-such-python GPUWIZARD_PREFIX=~/p3")
    lines = said(done)
    assert lines[0] == "bootstrap: fetching uv 0.13.9 for x86_64 from the package index"
    assert lines[1].startswith(
        "bootstrap: no Python >= 3.10 on this system: uv installs a standalone CPython 3.12"
    )
    if done.returncode == 0:
        return  # the download worked: nothing left unchecked
    # uv 0.13.9 asks Astral's mirror (releases.astral.sh) first, then GitHub; it names the last
    assert "github.com/astral-sh/python-build-standalone/releases/download/" in done.stderr
    assert done.stderr.rstrip().endswith("(removed /home/alice/p3, which this run had created)")
    not_checked(
        "uv's standalone CPython (python-build-standalone)",
        "neither releases.astral.sh nor github.com can be reached from here; bootstrap stopped "
        "at uv's download and removed its prefix",
    )


def test_without_python3_a_user_gets_one_line_and_root_installs_it(suite, user_machine):
    if suite != "bookworm":
        pytest.skip("the same path as on Debian 12")
    purge = [
        "python3",
        "python3-minimal",
        f"python{PYTHON[suite]}",
        f"python{PYTHON[suite]}-minimal",
    ]
    user_machine.run(["apt-get", "-q", "-y", "purge", *purge], env={"DEBIAN_FRONTEND": "noninteractive"}, check=True)  # fmt: skip
    assert user_machine.run(["sh", "-c", "command -v python3"]).returncode != 0
    refused = as_user(user_machine, env="GPUWIZARD_PREFIX=~/p4")
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1] == (
        "bootstrap: no python3 at all: install python3 and python3-venv (apt-get) or python3 (dnf)"
        " as root first, or run this as root on Debian/Ubuntu (/home/alice/p4 was not created)"
    )
    assert not user_machine.path("/home/alice/p4").exists()
    with timed(f"{suite}: bootstrap as root without python3"):
        done = as_root(user_machine)
    assert done.returncode == 0, done.stdout + done.stderr
    assert said(done)[:2] == [
        "bootstrap: no python3 on this system",
        "bootstrap: installing python3 python3-venv from the OS archive (apt-get)",
    ]
    assert planted_ran(user_machine) == []
