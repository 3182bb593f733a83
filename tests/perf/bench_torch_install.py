"""Benchmark: torch + torchvision into a fresh venv from a local wheel folder, uv (as install-torch
runs it, the pinned hashes file checked with --verify-hashes) against pip on the same wheels.

Run: python tests/perf/bench_torch_install.py [--wheels DIR] [--runs N]

The folder (``GPUWIZARD_TORCH_WHEELS``, default /work/scratch/wheels) holds what
``pip download torch==2.14.1 torchvision==0.29.1`` brings from PyPI (about 3 GB, 5.5 GB
installed), plus the pinned uv wheel (checked here against download_pins.yaml's SHA-256, as on a host) and
pip's pinned wheel. Nothing is downloaded: both tools run with ``--no-index --find-links DIR``
and no configuration of this machine's. uv starts from an empty cache each run (a cold cache, as
on a fresh server: it unpacks every wheel), pip with ``--no-cache-dir``; both venvs are made the
same way, untimed. Prints figures; asserts nothing (a shared machine is noisy).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from gpuwizard.core.download_pins import pin_for, pip_for, torch_wheels
from gpuwizard.core.ops import UvPipInstall
from gpuwizard.steps.install_python import UV_SPEC, UV_VERSION

GOAL_TIMES_FASTER = 2.5
TORCH, VISION, VARIANT = "2.14.1", "0.29.1", "cu130"
DEFAULT_WHEELS = "/work/scratch/wheels"


@dataclass(frozen=True)
class Result:
    uv_s: list[float]
    pip_s: list[float]
    uv_warm_s: float
    """A second uv install from the cache the first one filled: what a re-run or a prefetch gives."""
    installed: str
    """torch.__version__ as the uv-made environment imports it."""


class NotHere(Exception):
    """The wheel folder lacks what the benchmark needs; the message says what."""


def wheels_dir(given: str | None) -> Path:
    return Path(given or os.environ.get("GPUWIZARD_TORCH_WHEELS") or DEFAULT_WHEELS)


def python_tag() -> str:
    return f"cp{sys.version_info.major}{sys.version_info.minor}"


def pinned_uv(wheels: Path, into: Path) -> Path:
    """uv from its wheel in the folder, checked against download_pins.yaml's SHA-256 before it runs."""
    arch = platform.machine()
    pin = pin_for(UV_SPEC, arch)
    wheel = wheels / pin.file if pin.file else None
    if wheel is None or not wheel.exists():
        raise NotHere(f"no {pin.file or 'uv wheel'} in {wheels}: pip download uv=={UV_VERSION}")
    if hashlib.sha256(wheel.read_bytes()).hexdigest() != pin.sha256:
        raise NotHere(f"{wheel} does not match download_pins.yaml's SHA-256")
    uv = into / "uv"
    with zipfile.ZipFile(wheel) as archive:
        uv.write_bytes(archive.read(f"uv-{UV_VERSION}.data/scripts/uv"))
    uv.chmod(0o755)
    return uv


def check_folder(wheels: Path) -> None:
    tag = python_tag()
    for name, version in (("torch", TORCH), ("torchvision", VISION)):
        if not list(wheels.glob(f"{name}-{version}-{tag}-{tag}-*{platform.machine()}.whl")):
            raise NotHere(
                f"no {name} {version} wheel for {tag} in {wheels}: "
                f"pip download torch=={TORCH} torchvision=={VISION} -d {wheels}"
            )


def environment() -> dict[str, str]:
    """No configuration of this machine's (pip.conf, uv.toml), no bytecode cache redirection."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "PYTHON"))}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "UV_NO_CONFIG": "1"}


def run(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:4]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed


def venv(uv: Path, path: Path, wheels: Path, env: dict[str, str], with_pip: bool) -> None:
    """A venv from this Python, untimed; with the pinned pip for the pip run."""
    subprocess.run(
        [str(uv), "venv", "--quiet", "--python", sys.executable, str(path)], env=env, check=True
    )
    if with_pip:
        pip = f"pip=={pip_for(f'{sys.version_info.major}.{sys.version_info.minor}').version}"
        subprocess.run(
            [str(uv), "pip", "install", "--quiet", "--python", f"{path}/bin/python",
             "--no-index", "--find-links", str(wheels), pip],
            env=env, check=True,
        )  # fmt: skip


def uv_install(uv: Path, env_path: Path, hashes: Path, wheels: Path, cache: Path) -> list[str]:
    """install-torch's own operation, offline: the same argv plus the local folder and cache."""
    op = UvPipInstall(str(uv), str(env_path), hashes_file=str(hashes))
    local = ["--no-index", "--find-links", str(wheels), "--cache-dir", str(cache)]
    return [*op.command().argv, *local]


def pip_install(env_path: Path, wheels: Path) -> list[str]:
    """The pip fallback's install: the two checked wheel files, their dependencies by version."""
    tag, arch = python_tag(), platform.machine()
    files = [
        str(next(wheels.glob(f"{name}-{version}-{tag}-{tag}-*{arch}.whl")))
        for name, version in (("torch", TORCH), ("torchvision", VISION))
    ]
    pip = [f"{env_path}/bin/python", "-I", "-m", "pip", "install", "--quiet", "--no-cache-dir"]
    return [*pip, "--no-index", "--find-links", str(wheels), *files]


def measure(wheels: Path, runs: int) -> Result:
    check_folder(wheels)
    table = torch_wheels(TORCH, VARIANT)
    if table is None:
        raise NotHere(f"gpuwizard has no hashes file of torch {TORCH} ({VARIANT})")
    env = environment()
    uv_s, pip_s, warm, installed = [], [], 0.0, ""
    with tempfile.TemporaryDirectory(prefix="gpuwizard-torch-bench-", dir=wheels.parent) as tmp:
        work = Path(tmp)
        uv = pinned_uv(wheels, work)
        hashes = work / "torch.hashes.txt"
        python = f"{sys.version_info.major}.{sys.version_info.minor}"
        text = table.requirements_for(("torch", "torchvision"), python, platform.machine())
        if text is None:
            raise NotHere(f"the hashes file has no wheel for CPython {python} here")
        hashes.write_text(text)  # the file install-torch writes: this Python's wheels only
        for i in range(runs):
            cache, ours, theirs = work / f"cache{i}", work / f"uv{i}", work / f"pip{i}"
            venv(uv, ours, wheels, env, with_pip=False)
            uv_s.append(run(uv_install(uv, ours, hashes, wheels, cache), env))
            if i == 0:
                check = [f"{ours}/bin/python", "-I", "-c", "import torch; print(torch.__version__)"]
                installed = subprocess.run(check, capture_output=True, text=True).stdout.strip()
                again = work / "uv-warm"
                venv(uv, again, wheels, env, with_pip=False)
                warm = run(uv_install(uv, again, hashes, wheels, cache), env)
                shutil.rmtree(again)
            shutil.rmtree(ours)
            shutil.rmtree(cache)
            venv(uv, theirs, wheels, env, with_pip=True)
            pip_s.append(run(pip_install(theirs, wheels), env))
            shutil.rmtree(theirs)
    return Result(uv_s, pip_s, warm, installed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--wheels", help=f"the wheel folder (default {DEFAULT_WHEELS})")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    try:
        result = measure(wheels_dir(args.wheels), args.runs)
    except NotHere as missing:
        print(f"not measured: {missing}")
        return 0
    uv, pip = min(result.uv_s), min(result.pip_s)
    print(
        f"torch {TORCH} + torchvision {VISION} ({result.installed}) from {wheels_dir(args.wheels)}"
    )
    print(f"  uv, hashes checked, cold cache: {uv:.1f} s (runs {result.uv_s})")
    print(f"  uv, warm cache:                 {result.uv_warm_s:.1f} s")
    print(f"  pip, same wheels:               {pip:.1f} s (runs {result.pip_s})")
    print(f"  uv is {pip / uv:.2f}x faster (goal >= {GOAL_TIMES_FASTER}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
