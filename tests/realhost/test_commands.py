"""Every subcommand on this real machine, without a simulation: exit codes, output, no traceback.

A machine without an NVIDIA GPU (CI's, most developers') must be told so, offered the
simulation, and left unchanged; a machine with one gets its real answers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuwizard.core.codec import to_jsonable
from gpuwizard.core.paths import STATE_DIR
from gpuwizard.frontends import cli
from gpuwizard.machine.detect import detect_host
from gpuwizard.machine.detect.recording import recorded_host
from tests.realhost.conftest import gpuwizard, one_line

pytestmark = pytest.mark.timeout(180)
OFFER = "to try gpuwizard anyway, add --simulate PROFILE"


def test_detect_describes_this_machine(tmp_path: Path, has_gpu: bool) -> None:
    done = gpuwizard(tmp_path, "detect")
    assert done.returncode == 0
    assert done.stdout.startswith("Host     ") and "kernel " in done.stdout
    if not has_gpu:
        assert "GPU      no NVIDIA GPU found" in done.stdout
        assert OFFER in done.stderr


def test_detect_json_is_one_valid_json_object(tmp_path: Path, this_host: dict[str, object]) -> None:
    done = gpuwizard(tmp_path, "detect", "--json")
    data = json.loads(done.stdout)
    assert done.returncode == 0 and done.stderr == ""
    assert set(data) == {"schema", "facts", "findings"}
    assert data["facts"]["os"] == this_host["os"]
    assert data["facts"]["platform"]["arch"] == os.uname().machine


def test_detect_stays_light_on_this_machine() -> None:
    """detect loads neither the TUI, torch, the solver, the whole table nor a YAML parser: the OS
    rows come from the compiled table alone (recommend.os_support)."""
    heavy = (
        "textual", "torch", "yaml", "gpuwizard.frontends.app", "gpuwizard.recommend.engine",
        "gpuwizard.recommend.table",
    )  # fmt: skip
    code = (
        "import sys, io, contextlib\n"
        "from gpuwizard.frontends.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['detect', '--json'])\n"
        f"print(' '.join(m for m in {heavy!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == []


def test_recommend_answers_or_says_there_is_no_gpu(tmp_path: Path, has_gpu: bool) -> None:
    done = gpuwizard(tmp_path, "recommend")
    if has_gpu:
        assert done.returncode in (0, 3) and done.stdout
        return
    assert done.returncode == 3
    assert done.stdout == "Unsupported: no NVIDIA GPU was found on this host\n"
    assert OFFER in done.stderr


def test_recommend_json_is_the_contract(tmp_path: Path, has_gpu: bool) -> None:
    done = gpuwizard(tmp_path, "recommend", "--json")
    data = json.loads(done.stdout)
    assert done.returncode == (0 if data["status"] != "unsupported" else 3)
    if not has_gpu:
        assert data["status"] == "unsupported" and data["gpus"] == []
        assert "no NVIDIA GPU" in data["reason"]


def test_apply_dry_run_plans_and_changes_nothing(tmp_path: Path, has_gpu: bool) -> None:
    """Once `NameError: name 'Backend' is not defined` on every real machine."""
    state_before = Path(STATE_DIR).exists()
    done = gpuwizard(tmp_path, "apply", "--dry-run")
    assert Path(STATE_DIR).exists() == state_before
    if has_gpu:
        assert done.returncode in (0, 3)
        if done.returncode == 0:
            assert "(dry run: nothing was changed)" in done.stdout
        return
    assert done.returncode == 3 and done.stdout == ""
    assert one_line(done.stderr) == (
        "gpuwizard: nothing to install: no NVIDIA GPU was found on this host"
    )
    assert OFFER in done.stderr


@pytest.fixture
def unprivileged_home() -> Iterator[tuple[Path, int]]:
    """A home folder for an unprivileged user (nobody, when the tests run as root)."""
    uid = 65534 if os.geteuid() == 0 else os.geteuid()
    home = Path(tempfile.mkdtemp(prefix="gpuwizard-user-"))
    os.chown(home, uid, uid)
    yield home, uid
    shutil.rmtree(home)


def test_apply_without_root_is_refused_before_anything(
    unprivileged_home: tuple[Path, int],
) -> None:
    home, uid = unprivileged_home
    done = gpuwizard(home, "apply", "--yes", as_uid=uid)
    assert done.returncode == 2
    assert one_line(done.stderr).startswith(
        "gpuwizard: installing changes the system: run it as root (sudo gpuwizard apply ...)"
    )


def test_apply_dry_run_needs_no_root(unprivileged_home: tuple[Path, int], has_gpu: bool) -> None:
    home, uid = unprivileged_home
    done = gpuwizard(home, "apply", "--dry-run", as_uid=uid)
    if Path(STATE_DIR).exists():  # root's state (0700): one line (the test below)
        return
    assert done.returncode in ((0, 3) if has_gpu else (3,))
    assert "run it as root" not in done.stderr


@pytest.mark.parametrize("command", ["apply --dry-run", "export --format answers -o out.yaml"])
def test_a_state_root_left_is_one_line_to_another_user(
    unprivileged_home: tuple[Path, int], command: str
) -> None:
    """Only where this machine has one (a run as root made it, 0700): CI's fresh machine has none."""
    home, uid = unprivileged_home
    if not Path(STATE_DIR).exists() or os.geteuid() != 0:
        pytest.skip(f"no state of root's in {STATE_DIR} here")
    done = gpuwizard(home, *command.split(), as_uid=uid)
    assert done.returncode == 2
    assert done.stderr.startswith(f"gpuwizard: cannot read gpuwizard's state in {STATE_DIR}")


def test_a_state_another_user_owns_is_one_line(unprivileged_home: tuple[Path, int]) -> None:
    home, uid = unprivileged_home
    if os.geteuid() != 0:
        pytest.skip("a folder the user cannot read needs another owner: run the tests as root")
    state = home / "state"  # the home is the user's: the folder in it is root's, 0700
    state.mkdir(mode=0o700)
    code = (
        "import sys; from pathlib import Path; from gpuwizard.frontends import cli\n"
        "try:\n    cli.check_state_readable(Path(sys.argv[1]))\n"
        "except cli.UsageError as error:\n    print(error)"
    )
    user = ("setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups")
    done = subprocess.run(
        [*user, sys.executable, "-c", code, str(state)], capture_output=True, text=True, cwd=home
    )
    assert done.stdout == (
        f"cannot read gpuwizard's state in {state} (permission denied; it is root's): "
        "use sudo, or try --simulate PROFILE\n"
    )
    cli.check_state_readable(state)  # root reads it: nothing to say
    cli.check_state_readable(home / "missing")  # nothing there yet: nothing to say


def test_doctor_says_what_it_could_check(tmp_path: Path, has_gpu: bool) -> None:
    done = gpuwizard(tmp_path, "doctor")
    assert done.returncode in (0, 1, 2)
    assert done.stdout.startswith("gpuwizard doctor: ")
    if not has_gpu:
        assert done.returncode == 2
        assert "No NVIDIA GPU found" in done.stdout


def test_doctor_json_is_valid(tmp_path: Path, has_gpu: bool) -> None:
    done = gpuwizard(tmp_path, "doctor", "--json")
    data = json.loads(done.stdout)
    assert done.returncode in (0, 1, 2)
    assert isinstance(data, dict) and data
    if not has_gpu:
        assert done.returncode == 2


def test_export_to_a_folder(tmp_path: Path, has_gpu: bool) -> None:
    out = tmp_path / "setup"
    done = gpuwizard(tmp_path, "export", "-o", str(out))
    if has_gpu and done.returncode == 0:
        assert (out / "deploy.sh").is_file() and (out / "answers.yaml").is_file()
        return
    assert done.returncode == 3
    assert not out.exists()
    if not has_gpu:
        assert "no NVIDIA GPU was found on this host" in one_line(done.stderr)
        assert OFFER in done.stderr


def test_capture_host_records_what_detection_sees(
    tmp_path: Path, this_host: dict[str, object]
) -> None:
    folder = tmp_path / "capture"
    done = gpuwizard(tmp_path, "capture-host", str(folder), "--description", "this machine")
    assert done.returncode == 0
    assert done.stdout.startswith("recorded ") and str(folder) in done.stdout
    replayed = to_jsonable(detect_host(recorded_host(folder)))
    assert isinstance(replayed, dict)
    for key in ("os", "platform", "python"):
        assert replayed[key] == this_host[key], key
    live_hw, hw = this_host["hardware"], replayed["hardware"]
    assert isinstance(live_hw, dict) and isinstance(hw, dict)
    assert hw["gpus"] == live_hw["gpus"] and hw["cpu_model"] == live_hw["cpu_model"]
    live_installs, installs = this_host["installs"], replayed["installs"]
    assert isinstance(live_installs, dict) and isinstance(installs, dict)
    assert installs["packages"] == live_installs["packages"]
    assert installs["held_packages"] == live_installs["held_packages"]


def test_bench_without_an_environment_says_how_to_give_one(tmp_path: Path) -> None:
    done = gpuwizard(tmp_path, "bench")
    assert done.returncode == 2
    assert "pass --python PATH" in one_line(done.stderr)


def test_profiles_and_version(tmp_path: Path) -> None:
    profiles = gpuwizard(tmp_path, "profiles")
    version = gpuwizard(tmp_path, "--version")
    assert profiles.returncode == 0 and "h100x8-ubuntu2204-fresh" in profiles.stdout
    assert version.returncode == 0 and version.stdout.startswith("gpuwizard ")


def test_a_broken_nvml_library_is_reported_as_no_driver(tmp_path: Path, has_gpu: bool) -> None:
    """A libnvidia-ml.so.1 the loader finds but cannot load: pynvml is asked, and says so."""
    if has_gpu:
        pytest.skip("a real driver answers on this machine")
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "libnvidia-ml.so.1").write_bytes(b"not a shared object")
    done = gpuwizard(tmp_path, "detect", "--json", env={"LD_LIBRARY_PATH": str(lib)})
    nvml = json.loads(done.stdout)["facts"]["boot"]["nvml"]
    assert nvml["reason"] == "no NVIDIA driver is installed (libnvidia-ml.so.1 not found)"
