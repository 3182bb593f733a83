"""Where gpuwizard chooses the real machine, in-process: the real side of every choice (the
simulated side is in tests/cli/test_machine_choice.py)."""

from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path

import pytest

from gpuwizard.frontends import cli
from gpuwizard.frontends.cliargs import UsageError
from gpuwizard.machine.host import Host
from tests.realhost.conftest import unprivileged

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the root side needs root (CI is)")


def args(**given: object) -> argparse.Namespace:
    return argparse.Namespace(**{"simulate": None, "reset": False, **given})


def test_without_simulate_detection_reads_this_machine() -> None:
    host = cli.host_for(args())
    assert isinstance(host, Host) and host.root == Path("/")


def test_without_simulate_the_backend_and_machine_are_this_machine() -> None:
    assert cli.backend_for(args()).name == socket.gethostname()
    machine = cli.machine_for(args())
    assert not machine.simulated and machine.host().root == Path("/")


def test_reset_without_a_simulated_host_is_refused() -> None:
    with pytest.raises(UsageError, match="--reset starts a simulated host over"):
        cli.backend_for(args(reset=True))


@needs_root
def test_the_wizard_drives_this_machine_when_it_has_a_gpu_and_runs_as_root() -> None:
    backend = cli.tui_backend(args(), has_gpu=lambda: True)()
    assert backend.name == socket.gethostname() and not backend.simulated


def test_the_wizard_on_a_gpu_machine_without_root_says_to_use_sudo() -> None:
    with unprivileged(), pytest.raises(UsageError, match=r"run it as root \(sudo gpuwizard\)"):
        cli.tui_backend(args(), has_gpu=lambda: True)


def test_the_gpu_check_looks_at_this_machine(has_gpu: bool) -> None:
    assert cli.has_nvidia_gpu() is has_gpu


@needs_root
def test_root_passes_the_root_check() -> None:
    cli.require_root("installing changes the system")


def test_a_user_without_root_is_told_to_use_it() -> None:
    with unprivileged(), pytest.raises(UsageError) as refused:
        cli.require_root("installing changes the system: run it as root (sudo gpuwizard apply ...)")
    assert str(refused.value).startswith("installing changes the system: run it as root")
    assert "`gpuwizard profiles`" in str(refused.value)


@needs_root
def test_detection_skips_folders_this_user_may_not_enter(tmp_path: Path) -> None:
    """Not root, detection meets /root/miniconda3 and the like: unreadable is "not there"."""
    inside = tmp_path / "private" / "inside"
    inside.mkdir(parents=True)
    (tmp_path / "private").chmod(0o700)
    host = cli.host_for(args())
    assert host.is_dir(str(inside))
    with unprivileged():
        assert host.is_dir(str(inside)) is False
        assert host.exists(str(inside)) is False


def test_nvml_is_asked_only_where_its_library_can_be_found(tmp_path: Path) -> None:
    from gpuwizard.machine.detect.nvml import NVML_LIBRARY, library_findable, probe_nvml

    cache = tmp_path / "ld.so.cache"
    cache.write_bytes(b"glibc-ld.so.cache1.1\0libc.so.6\0/usr/lib/x86_64-linux-gnu/libc.so.6\0")
    assert not library_findable(cache, dirs=())
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / NVML_LIBRARY).write_bytes(b"")
    assert library_findable(cache, dirs=(str(tmp_path / "lib"),))
    cache.write_bytes(cache.read_bytes() + NVML_LIBRARY.encode() + b"\0")
    assert library_findable(cache, dirs=())
    assert library_findable(tmp_path / "no-cache", dirs=())  # cannot tell: NVML decides
    if not library_findable():  # this machine without a driver: the answer pynvml would give
        assert probe_nvml().reason == "no NVIDIA driver is installed (libnvidia-ml.so.1 not found)"


def test_apply_without_root_is_refused_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    with unprivileged():
        code = cli.main(["apply", "--yes"])
    assert code == 2
    assert "installing changes the system: run it as root" in capsys.readouterr().err
