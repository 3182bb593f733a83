"""Verify PyTorch in the environment it runs in; write a JSON report; exit 1 on any problem.

Standalone: the target environment has torch and torchvision but not gpuwizard, so this file
imports only the standard library, torch and torchvision (inside main). argv: report path,
expected GPU count, environment path. Every problem names its likely cause.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any


def boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return None


def btime() -> int | None:
    """When this boot began (/proc/stat): tells the boot where the boot_id cannot be read."""
    try:
        lines = Path("/proc/stat").read_text(encoding="ascii").splitlines()
    except OSError:
        return None
    for line in lines:
        words = line.split()
        if len(words) == 2 and words[0] == "btime" and words[1].isdigit():
            return int(words[1])
    return None


def covered(major: int, minor: int, arch_list: list[str]) -> bool:
    """A build serves sm_XY if it has sm_XZ with Z <= Y (same major): the cubin rule."""
    tags = [a for a in arch_list if a.startswith("sm_") and a[3:].isdigit()]
    return any(int(t[3:-1]) == major and int(t[-1]) <= minor for t in tags)


def train_step(torch: Any, device: Any) -> None:
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(16 * 30 * 30, 10),
    )
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = (
        torch.amp.GradScaler("cuda")
        if hasattr(torch.amp, "GradScaler")
        else torch.cuda.amp.GradScaler()
    )
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(torch.randn(8, 3, 32, 32, device=device)).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()


def check_gpu(
    torch: Any, index: int, arch_list: list[str], devices: list[str], problems: list[str]
) -> None:
    name = torch.cuda.get_device_name(index)
    major, minor = torch.cuda.get_device_capability(index)
    devices.append(f"{index}: {name} (sm_{major}{minor})")
    if not covered(major, minor, arch_list):
        shipped = " ".join(arch_list)
        problems.append(
            f"{name} is sm_{major}{minor} but this torch build has kernels for {shipped} only: "
            f"install a build with sm_{major}{minor}"
        )
        return
    device = torch.device("cuda", index)
    a = torch.randn(1024, 1024, device=device)
    if not torch.allclose(a @ torch.eye(1024, device=device), a, atol=1e-3):
        problems.append(f"matmul on GPU {index} gave wrong results")
    train_step(torch, device)
    torch.cuda.synchronize(device)


def check_torchvision(torch: Any, problems: list[str]) -> None:
    try:
        import torchvision

        boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0]], device="cuda")
        torchvision.ops.nms(boxes, torch.tensor([0.9, 0.8], device="cuda"), 0.5)
    except Exception as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        problems.append(
            f"torchvision's compiled ops fail ({first}): torch and torchvision do not match"
        )


def check(expected: int) -> tuple[str, list[str], list[str]]:
    devices: list[str] = []
    problems: list[str] = []
    import torch

    version = str(torch.__version__).split("+")[0]
    if not torch.cuda.is_available():
        cuda = torch.version.cuda
        problems.append(
            f"torch.cuda.is_available() is False (torch built for CUDA {cuda}): "
            "the driver is not loaded, or it is older than this build needs"
        )
        return version, devices, problems
    count = torch.cuda.device_count()
    if count != expected:
        problems.append(
            f"torch sees {count} GPU(s), the host has {expected}: CUDA_VISIBLE_DEVICES, or a GPU fallen off the bus"
        )
    arch_list = list(torch.cuda.get_arch_list())
    for index in range(count):
        check_gpu(torch, index, arch_list, devices, problems)
    check_torchvision(torch, problems)
    return version, devices, problems


def write_report(path: str, report: dict[str, Any]) -> None:
    """Atomically: readers see the old report or the new one, never half of one."""
    directory = Path(path).parent
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".verify.")
    with os.fdopen(fd, "w") as handle:
        json.dump(report, handle, indent=2)
        handle.flush()
        os.fsync(handle.fileno())
    Path(tmp).replace(path)


def main(argv: list[str]) -> int:
    report_path, expected, env = argv[0], int(argv[1]), argv[2]
    try:
        version, devices, problems = check(expected)
    except Exception as error:
        version, devices = "not installed", []
        problems = [f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"]
    report = {
        "env": env,
        "torch": version,
        "boot_id": boot_id(),
        "btime": btime(),
        "ok": not problems,
        "devices": devices,
        "problems": problems,
    }
    write_report(report_path, report)
    lines = devices + (
        [f"PROBLEM: {p}" for p in problems]
        if problems
        else [f"verified: torch {version} on {len(devices)} GPU(s)"]
    )
    sys.stdout.write("\n".join(lines) + "\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
