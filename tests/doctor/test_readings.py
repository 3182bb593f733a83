"""What the doctor reads through the Host door: a temporary root, recorded command answers, and
no NVML; nothing here touches the real machine."""

from __future__ import annotations

import json
from pathlib import Path

from gpuwizard.core.facts import NvmlUnavailable
from gpuwizard.doctor.observed import (
    cuda_from_local_tag,
    parse_cuda_version_json,
    parse_nvcc_version,
    parse_torch_version_py,
)
from gpuwizard.doctor.readings import (
    read_bench,
    read_infiniband,
    read_kernel_log,
    read_module_signer,
    read_toolkit,
    read_torch,
)
from gpuwizard.machine.detect.recording import RecordedCommands
from gpuwizard.machine.host import Host, Output
from tests.conftest import facts_of
from tests.doctor.conftest import with_boot, with_installs

ROOT_DENIED = Output(1, "", "dmesg: read kernel buffer failed: Operation not permitted\n")
NOT_IN_GROUP = Output(0, "", "")  # journalctl -q as a user outside adm / systemd-journal
NVCC = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.8, V12.8.93\n"
VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'xpu']
__version__ = '2.9.0+cu128'
debug = False
cuda: Optional[str] = '12.8'
git_version = '0fabc3ba44823f257e70ce397d989c8de5e362c1'
hip: Optional[str] = None
"""


def host(root: Path, commands: dict[str, Output] | None = None) -> Host:
    return Host(
        root=root, run=RecordedCommands(commands or {}), nvml=lambda: NvmlUnavailable("none")
    )


def write(root: Path, path: str, text: str = "") -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def test_the_kernel_log_comes_from_dmesg_when_it_may_be_read(tmp_path: Path) -> None:
    log, why = read_kernel_log(host(tmp_path, {"dmesg": Output(0, "[ 1.0] Linux version 6.8\n")}))
    assert (log and log.source, why) == ("dmesg", None)


def test_journalctl_answers_when_dmesg_is_restricted(tmp_path: Path) -> None:
    commands = {
        "dmesg": ROOT_DENIED,
        "journalctl -k -b --no-pager -q": Output(
            0, "Dec 02 kernel: NVRM: Xid (PCI:0000:1b:00): 79\n"
        ),
    }
    log, _ = read_kernel_log(host(tmp_path, commands))
    assert log is not None and log.source == "journalctl -k" and "Xid" in log.text


def test_an_unreadable_kernel_log_says_why(tmp_path: Path) -> None:
    commands = {"dmesg": ROOT_DENIED, "journalctl -k -b --no-pager -q": NOT_IN_GROUP}
    log, why = read_kernel_log(host(tmp_path, commands))
    assert log is None
    assert (
        why
        == "kernel log: dmesg: dmesg: read kernel buffer failed: Operation not permitted; journalctl -k: no entries"
    )


def test_a_recording_without_the_command_is_unreadable_not_a_crash(tmp_path: Path) -> None:
    log, why = read_kernel_log(host(tmp_path))
    assert log is None and why is not None and "no recording for command: dmesg" in why


def test_torch_is_read_from_its_version_file_without_importing_it(tmp_path: Path) -> None:
    env = "/opt/gpuwizard/envs/pytorch"
    write(tmp_path, f"{env}/lib/python3.12/site-packages/torch/version.py", VERSION_PY)
    torch, _ = read_torch(host(tmp_path), facts_of("h200-ubuntu2404-driver570"), env)
    assert torch is not None
    assert (torch.version, torch.cuda, torch.variant, torch.release) == (
        "2.9.0+cu128",
        "12.8",
        "cu128",
        "2.9.0",
    )


def test_torch_without_a_version_file_is_read_from_its_dist_info_name(tmp_path: Path) -> None:
    env = "/opt/conda/envs/train"
    (
        tmp_path / env.lstrip("/") / "lib/python3.11/site-packages/torch-2.14.1+cu130.dist-info"
    ).mkdir(parents=True)
    torch, _ = read_torch(host(tmp_path), facts_of("h200-ubuntu2404-driver570"), env)
    assert torch is not None and (torch.cuda, torch.build_known) == ("13.0", True)


def test_a_pypi_torch_without_a_tag_has_an_unknown_build(tmp_path: Path) -> None:
    env = "/opt/gpuwizard/envs/pytorch"
    (tmp_path / env.lstrip("/") / "lib/python3.12/site-packages/torch-2.14.1.dist-info").mkdir(
        parents=True
    )
    torch, _ = read_torch(host(tmp_path), facts_of("h200-ubuntu2404-driver570"), env)
    assert torch is not None and (torch.cuda, torch.build_known) == (None, False)


def test_no_environment_is_no_torch_and_no_complaint(tmp_path: Path) -> None:
    assert read_torch(
        host(tmp_path), facts_of("h200-ubuntu2404-driver570"), "/opt/gpuwizard/envs/pytorch"
    ) == (None, None)


def test_nvcc_is_asked_its_version(tmp_path: Path) -> None:
    write(tmp_path, "/usr/local/cuda-12.8/bin/nvcc")
    facts = with_installs(facts_of("h200-ubuntu2404-driver570"), cuda_toolkits=("12.8",))
    toolkit = read_toolkit(
        host(tmp_path, {"/usr/local/cuda-12.8/bin/nvcc --version": Output(0, NVCC)}), facts
    )
    assert toolkit is not None and (toolkit.path, toolkit.version) == (
        "/usr/local/cuda-12.8/bin/nvcc",
        "12.8",
    )


def test_an_nvcc_that_will_not_run_is_read_from_version_json_or_its_folder(tmp_path: Path) -> None:
    write(tmp_path, "/usr/local/cuda-12.6/bin/nvcc")
    write(
        tmp_path,
        "/usr/local/cuda-12.6/version.json",
        json.dumps({"cuda_nvcc": {"name": "CUDA NVCC", "version": "12.6.85"}}),
    )
    write(tmp_path, "/usr/local/cuda-13.0/bin/nvcc")
    facts = with_installs(facts_of("h200-ubuntu2404-driver570"), cuda_toolkits=("12.6",))
    toolkit = read_toolkit(host(tmp_path), facts)
    assert toolkit is not None and toolkit.version == "12.6"
    facts = with_installs(facts, cuda_toolkits=("13.0",))
    toolkit = read_toolkit(host(tmp_path), facts)
    assert toolkit is not None and toolkit.version == "13.0"


def test_the_module_signer_is_asked_only_under_secure_boot(tmp_path: Path) -> None:
    facts = facts_of("h200-ubuntu2404-driver570")
    assert read_module_signer(host(tmp_path), facts) is None  # Secure Boot off: nothing is run
    secure = with_boot(facts, secure_boot="enabled")
    answer = {
        "modinfo -k 6.8.0-60-generic -F signer nvidia": Output(0, "DKMS module signing key\n")
    }
    assert read_module_signer(host(tmp_path, answer), secure) == "DKMS module signing key"


def test_infiniband_ports_are_read_from_sysfs(tmp_path: Path) -> None:
    base = "/sys/class/infiniband/mlx5_0/ports/1"
    for name, text in (
        ("state", "4: ACTIVE\n"),
        ("rate", "400 Gb/sec (4X NDR)\n"),
        ("link_layer", "InfiniBand\n"),
    ):
        write(tmp_path, f"{base}/{name}", text)
    (port,) = read_infiniband(host(tmp_path))
    assert (port.device, port.port, port.active, port.rate) == (
        "mlx5_0",
        "1",
        True,
        "400 Gb/sec (4X NDR)",
    )


def test_the_newest_benchmark_counts_wherever_it_was_saved(tmp_path: Path) -> None:
    def save(state: Path, stamp: str, batch: int) -> None:
        folder = state / "bench" / stamp
        folder.mkdir(parents=True)
        results = {"gpu": "H100 SXM5 80GB", "environment": {"model": "resnet50", "image_size": 224},
                   "results": [{"mode": "amp-bf16", "world_size": 1, "batch_size": batch, "memory_mib": 70000}]}  # fmt: skip
        (folder / "results.json").write_text(json.dumps(results))

    save(tmp_path / "root-state", "20261201-090000", 256)
    save(tmp_path / "user-state", "20261202-090000", 512)
    bench, why = read_bench((tmp_path / "root-state", tmp_path / "user-state"))
    assert why is None and bench is not None
    assert [(f.mode, f.batch_size) for f in bench.fits] == [("amp-bf16", 512)]
    (tmp_path / "user-state/bench/20261202-090000/results.json").write_text("{not json")
    assert read_bench((tmp_path / "user-state",))[1] is not None


def test_parsers_read_the_real_formats() -> None:
    assert parse_torch_version_py(VERSION_PY) == ("2.9.0+cu128", "12.8")
    assert parse_torch_version_py("__version__ = '1.12.1+cu116'\ncuda = '11.6'\n") == (
        "1.12.1+cu116",
        "11.6",
    )
    assert parse_torch_version_py("__version__ = '2.9.0+cpu'\ncuda: Optional[str] = None\n") == (
        "2.9.0+cpu",
        None,
    )
    assert parse_torch_version_py("print('hello')") is None
    assert cuda_from_local_tag("2.14.1+cu130") == "13.0" and cuda_from_local_tag("2.14.1") is None
    assert parse_nvcc_version(NVCC) == "12.8"
    assert (
        parse_cuda_version_json('{"cuda_nvcc" : {"name" : "CUDA NVCC", "version" : "13.0.48"}}')
        == "13.0"
    )
