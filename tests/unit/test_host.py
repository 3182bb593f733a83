from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpuwizard.core.facts import NvmlUnavailable
from gpuwizard.machine.detect.recording import RecordedCommands, UnrecordedCommand
from gpuwizard.machine.host import Host, HostPathError, SubprocessRunner


def make_host(root: Path, **kwargs) -> Host:
    return Host(root=root, run=RecordedCommands({}), nvml=lambda: NvmlUnavailable("none"), **kwargs)


def test_paths_are_joined_to_the_root_and_may_not_escape(tmp_path):
    host = make_host(tmp_path)
    assert host.path("/etc/os-release") == tmp_path / "etc" / "os-release"
    with pytest.raises(HostPathError):
        host.path("/etc/../../outside")
    with pytest.raises(HostPathError):
        host.path("relative/path")


def test_missing_files_read_as_none(tmp_path):
    assert make_host(tmp_path).read_text("/nope") is None


def test_recorded_links_and_empty_dirs_behave_like_the_real_thing(tmp_path):
    (tmp_path / "sys/bus").mkdir(parents=True)
    host = make_host(
        tmp_path,
        links={"/sys/bus/x/driver": "../../drivers/nouveau"},
        empty_dirs=frozenset({"/lib/modules/6.8.0-60-generic"}),
    )
    assert host.readlink("/sys/bus/x/driver") == "../../drivers/nouveau"
    assert host.listdir("/sys/bus/x") == ("driver",)
    assert host.listdir("/lib/modules") == ("6.8.0-60-generic",)
    assert host.is_dir("/lib/modules/6.8.0-60-generic") and host.is_dir("/lib")
    assert host.exists("/sys/bus/x/driver") and not host.exists("/sys/bus/y")


def test_reading_is_limited_when_asked(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 10_000)
    assert len(make_host(tmp_path).read_bytes("/big", limit=100) or b"") == 100


def test_a_missing_tool_is_exit_127_not_an_exception():
    assert SubprocessRunner()(["gpuwizard-no-such-tool"]).returncode == 127


def test_commands_run_with_a_fixed_locale_and_path():
    out = SubprocessRunner()(
        [sys.executable, "-c", "import os; print(os.environ['LC_ALL'], os.environ['PATH'])"]
    )
    assert out.returncode == 0
    assert out.stdout.startswith("C /usr/local/sbin:")


def test_a_hung_command_times_out():
    out = SubprocessRunner()([sys.executable, "-c", "import time; time.sleep(30)"], timeout_s=0.5)
    assert out.returncode == 124


def test_a_recording_refuses_commands_it_does_not_have():
    with pytest.raises(UnrecordedCommand, match="no recording for command: nvidia-smi -L"):
        RecordedCommands({})(["nvidia-smi", "-L"])


def test_a_file_that_is_not_executable_is_permission_denied(tmp_path):
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\necho never\n")
    script.chmod(0o644)
    out = SubprocessRunner()([str(script)])
    assert out.returncode == 126 and "Permission denied" in out.stderr


def test_a_timed_out_command_keeps_what_it_printed_first():
    slow = "import sys, time; print('half done', flush=True); time.sleep(30)"
    out = SubprocessRunner()([sys.executable, "-c", slow], timeout_s=1)
    assert out.returncode == 124
    assert out.stdout == "half done\n" and out.stderr == "timed out after 1 s"
