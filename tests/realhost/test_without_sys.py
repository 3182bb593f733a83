"""This real machine with its /sys hidden (a tmpfs over it, in a private mount namespace): the
installed detect and doctor say that /sys could not be read, not that there is no GPU. The
side with /sys is test_commands.py's ``test_detect_describes_this_machine``; the recorded side
is tests/hosts/test_without_sys.py; a real Debian root without /sys is tests/chroot."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.realhost.conftest import GPUWIZARD

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("unshare") is None,
        reason="hiding /sys needs root and unshare (CI has both)",
    ),
]


def without_sys(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``gpuwizard ARGS`` in a mount namespace of its own where /sys is an empty tmpfs."""
    script = 'mount -t tmpfs none /sys && exec "$@"'
    env = {**os.environ, "XDG_STATE_HOME": str(home / "state"), "HOME": str(home)}
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "gpuwizard",
         str(GPUWIZARD), *args],
        capture_output=True, text=True, env=env, cwd=home, timeout=90, check=False,
    )  # fmt: skip
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


def test_detect_says_sys_could_not_be_read(tmp_path):
    done = without_sys(tmp_path, "detect")
    assert done.returncode == 0, done.stderr
    assert "GPU      unknown: /sys could not be read" in done.stdout
    assert "no NVIDIA GPU" not in done.stdout + done.stderr
    assert done.stderr.startswith("/sys could not be read here")


def test_detect_json_carries_it(tmp_path):
    done = without_sys(tmp_path, "detect", "--json")
    assert '"pci_visible": false' in done.stdout


def test_doctor_says_sys_could_not_be_read_and_exits_2(tmp_path):
    done = without_sys(tmp_path, "doctor")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "UNCHECKED  /sys could not be read" in done.stdout
    assert "PCI bus" not in done.stdout
