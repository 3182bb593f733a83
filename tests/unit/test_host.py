from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpuwizard.core.facts import NvmlUnavailable
from gpuwizard.machine.detect.recording import RecordedCommands, UnrecordedCommand
from gpuwizard.machine.host import (
    SESSION_VALUE_MAX,
    Host,
    HostPathError,
    SubprocessRunner,
    session_environ,
)


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


def test_probes_started_together_answer_from_their_own_run(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    # Each probe waits until both have started: run one after the other, they would time out.
    probe = [
        sys.executable,
        "-c",
        "import pathlib, sys, time; d = pathlib.Path(sys.argv[1]); (d / sys.argv[2]).touch()\n"
        "while len(list(d.iterdir())) < 2: time.sleep(0.01)\n"
        "print(sys.argv[2])",
        str(marks),
    ]
    host = Host(root=tmp_path, run=SubprocessRunner(), nvml=lambda: NvmlUnavailable("none"))
    with host.probing([[*probe, "a"], [*probe, "b"]]) as probed:
        assert probed.run([*probe, "a"], timeout_s=30).stdout == "a\n"
        assert probed.run([*probe, "b"], timeout_s=30).stdout == "b\n"
        assert probed.run(["true"]).returncode == 0  # not started early: run when asked


def test_a_probe_nobody_asks_for_is_waited_for_when_the_reading_ends(tmp_path: Path) -> None:
    done = tmp_path / "done"
    late = [
        sys.executable,
        "-c",
        f"import time, pathlib; time.sleep(0.3); pathlib.Path({str(done)!r}).touch()",
    ]
    host = Host(root=tmp_path, run=SubprocessRunner(), nvml=lambda: NvmlUnavailable("none"))
    with host.probing([late]):
        pass
    assert done.exists()


def test_a_recorded_host_is_probed_one_command_at_a_time(tmp_path: Path) -> None:
    host = make_host(tmp_path)
    with host.probing([["uname", "-m"]]) as probed:
        assert probed is host


def test_a_started_probe_times_out_like_a_run_one(tmp_path: Path) -> None:
    out = SubprocessRunner().start(["sleep", "5"])(0.2)
    assert out.returncode == 124 and "timed out after 0.2 s" in out.stderr


def test_a_listing_with_a_limit_reads_no_more_entries(tmp_path: Path) -> None:
    for i in range(500):
        (tmp_path / f"pkg{i:03d}.dist-info").mkdir()
    host = make_host(tmp_path)
    assert len(host.listdir("/")) == 500
    capped = host.listdir("/", limit=64)
    assert len(capped) == 64 and list(capped) == sorted(capped)


def test_probes_run_from_the_root_folder_whatever_the_caller_stands_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = SubprocessRunner()([sys.executable, "-c", "import os; print(os.getcwd())"])
    assert out.stdout.strip() == "/"


def test_the_session_keeps_only_its_keys_each_cut_short() -> None:
    environ = {
        "PATH": "/a:" * 5000,
        "VIRTUAL_ENV": "/v",
        "AWS_SECRET_ACCESS_KEY": "s3cr3t",
        "HOME": "/root",
    }
    session = session_environ(environ)
    assert set(session) == {"PATH", "VIRTUAL_ENV", "HOME"}
    assert len(session["PATH"]) == SESSION_VALUE_MAX


def test_a_real_link_under_a_recorded_root_is_not_the_machines(tmp_path: Path) -> None:
    """The strict editable install lays a recorded host out as links to the source tree; only
    links.json says what the machine's links were."""
    (tmp_path / "usr/bin").mkdir(parents=True)
    (tmp_path / "elsewhere").write_text("")
    (tmp_path / "usr/bin/python3.12").symlink_to(tmp_path / "elsewhere")
    host = make_host(tmp_path, links={"/usr/bin/python3": "python3.12"})
    assert host.readlink("/usr/bin/python3") == "python3.12"
    assert host.readlink("/usr/bin/python3.12") is None


def test_a_file_someone_else_may_change_is_foreign(tmp_path: Path) -> None:
    (tmp_path / "mine").write_text("")
    (tmp_path / "shared").write_text("")
    (tmp_path / "shared").chmod(0o666)
    host = make_host(tmp_path)
    assert not host.foreign("/mine")
    assert host.foreign("/shared") and host.foreign("/missing")
