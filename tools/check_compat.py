"""Check wizard/recommend/compat.yaml against PyPI (pip's own resolver) and NVIDIA's GPU lists.

Usage:
    python tools/check_compat.py            # ask PyPI, read NVIDIA's lists, write both caches
    python tools/check_compat.py --offline  # judge the table by the cached answers only
    python tools/check_compat.py --only gpus --open-modules PATH   # the GPU lists alone, from a
                                                                   # clone of open-gpu-kernel-modules

The GPU part (tools/nvidia_lists.py, judged by wizard/recommend/gpu_lists.py) reads, for every
GPU of the table's ``gpu_listings``, NVIDIA's open-kernel-module README at every release tag and
the driver README's Appendix A from every driver package of Ubuntu's and Debian's archives,
prints the first release of each flavour that lists it, and keeps what it read, dated, in
tools/compat_gpu_lists_cache.json (tests/recommend/test_gpu_lists.py holds the table to it).

What it asks, per torch release on PyPI (1.12.1 and newer) and per platform (x86_64, aarch64):

* which CPython versions have a wheel: ``pip index versions torch --platform TAG... --python-version
  X.Y`` for every X.Y from 3.7 to 3.15, once per platform (pip's finder applies the same tag and
  Requires-Python rules as its resolver);
* at the oldest and newest of them, what pip resolves: ``pip install --dry-run --report FILE
  --ignore-installed --no-deps --only-binary=:all: --platform TAG... --python-version X.Y --target
  DIR torch==V``. The report gives the wheel's file name, Requires-Python and Requires-Dist; the
  CUDA runtime pin that applies on that platform (nvidia-cuda-runtime-cuXX or cuda-toolkit) names
  PyPI's default CUDA build;
* every torchvision release's torch requirement (its Requires-Dist), for the pairing.

Every manylinux tag a release may use is passed (manylinux1/2010/2014 and manylinux_2_5 to
manylinux_2_40), so old manylinux1 wheels are found as well as new manylinux_2_28 ones. pip runs
with PIP_CONFIG_FILE=/dev/null and no other PIP_* variable (this machine's pip configuration caps
torch with a constraint file and adds local indexes; ``--isolated`` would still read it), and with
``--cert`` pointing at the system CA bundle.

The answers go to tools/compat_pypi_cache.json with the date; tests/recommend/test_pypi_cache.py
holds compat.yaml to that file offline. Exit status: 0 when the table and PyPI agree, 1 on any
disagreement (each is printed), 2 when PyPI or NVIDIA's lists could not be read.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

# pip's own copy of packaging, so the tool needs nothing that pip does not bring
from pip._vendor.packaging.markers import default_environment
from pip._vendor.packaging.requirements import Requirement

from gpuwizard.core.codec import CodecError, from_jsonable, to_jsonable
from gpuwizard.core.version import Version
from gpuwizard.recommend import gpu_lists
from gpuwizard.recommend.pypi_facts import (
    OLDEST,
    PLATFORMS,
    PlatformAnswer,
    PypiAnswers,
    TorchvisionAnswer,
    WheelAnswer,
    cuda_build,
    disagreements,
)
from gpuwizard.recommend.table import CompatTable, load_table

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling, tools/nvidia_lists.py
import nvidia_lists

CACHE = Path(__file__).with_name("compat_pypi_cache.json")
GPU_CACHE = Path(__file__).with_name("compat_gpu_lists_cache.json")
INDEX = "https://pypi.org/simple"
PYTHONS = ("3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15")
CA_BUNDLES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt")
TORCHVISION_OLDEST = "0.13.0"


class PipFailed(RuntimeError):
    """pip could not answer (network, TLS, an unexpected report)."""


def manylinux_tags(arch: str) -> list[str]:
    legacy = ["manylinux2014"] + (["manylinux1", "manylinux2010"] if arch == "x86_64" else [])
    modern = [f"manylinux_2_{minor}" for minor in range(5, 41)]
    return [f"{tag}_{arch}" for tag in legacy + modern]


def pip_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


class Pip:
    """pip, run as a subprocess with no configuration but ours."""

    def __init__(self, python: str, cert: str) -> None:
        self.python = python
        self.cert = cert

    def run(self, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
        argv = [self.python, "-m", "pip", *args, "--index-url", INDEX, "--cert", self.cert]
        return subprocess.run(
            argv, capture_output=True, text=True, env=pip_environment(), timeout=600, check=False
        )

    def version(self) -> str:
        done = subprocess.run(
            [self.python, "-m", "pip", "--version"],
            capture_output=True,
            text=True,
            env=pip_environment(),
            check=True,
        )
        return " ".join(done.stdout.split()[:2])

    def target_args(self, arch: str, python: str) -> list[str]:
        platforms = [arg for tag in manylinux_tags(arch) for arg in ("--platform", tag)]
        return ["--only-binary=:all:", *platforms, "--python-version", python]

    def versions(self, package: str, arch: str, python: str) -> list[str]:
        done = self.run(["index", "versions", package, *self.target_args(arch, python)])
        found = re.search(r"^Available versions: (.+)$", done.stdout, re.MULTILINE)
        if found:
            return [v.strip() for v in found.group(1).split(",")]
        if "No matching distribution" in done.stderr:
            return []
        raise PipFailed(f"pip index versions {package} ({arch}, {python}): {_tail(done)}")

    def resolve(self, package: str, version: str, arch: str, python: str) -> dict[str, object]:
        with tempfile.TemporaryDirectory() as scratch:
            report = Path(scratch) / "report.json"
            args = ["install", "--dry-run", "--quiet", "--report", str(report)]
            args += ["--ignore-installed", "--no-deps", *self.target_args(arch, python)]
            args += ["--target", str(Path(scratch) / "target"), f"{package}=={version}"]
            done = self.run(args)
            if done.returncode != 0:
                raise PipFailed(f"pip install --dry-run {package}=={version}: {_tail(done)}")
            installs = json.loads(report.read_text(encoding="utf-8"))["install"]
        if len(installs) != 1:
            raise PipFailed(f"{package}=={version}: expected one wheel in the report")
        item: dict[str, object] = installs[0]
        return item


def _tail(done: subprocess.CompletedProcess[str]) -> str:
    text = (done.stderr or done.stdout).strip().splitlines()
    return text[-1] if text else f"exit {done.returncode}"


def marker_environment(arch: str, python: str) -> dict[str, str]:
    env = dict(default_environment())
    env.update(
        platform_system="Linux",
        sys_platform="linux",
        os_name="posix",
        platform_machine=arch,
        python_version=python,
        python_full_version=f"{python}.0",
        implementation_name="cpython",
        platform_python_implementation="CPython",
    )
    return env


def applying(requires: Sequence[str], arch: str, python: str) -> list[Requirement]:
    """The requirements whose markers hold on this platform and Python (no extras)."""
    env = marker_environment(arch, python)
    out = []
    for line in requires:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate({**env, "extra": ""}):
            out.append(requirement)
    return out


def wheel_answer(item: dict[str, object], arch: str, python: str) -> WheelAnswer:
    metadata = item["metadata"]
    assert isinstance(metadata, dict)
    url = str(item["download_info"]["url"])  # type: ignore[index]
    cuda = tuple(
        f"{r.name}{r.specifier}"
        for r in applying(metadata.get("requires_dist") or [], arch, python)
        if r.name.startswith(("nvidia-cuda-runtime", "cuda-toolkit", "nvidia-cudnn"))
    )
    return WheelAnswer(
        wheel=url.rsplit("/", 1)[-1],
        requires_python=metadata.get("requires_python"),
        cuda=cuda_build(tuple(c.split(";")[0] for c in cuda)),
        cuda_requirements=cuda,
    )


def torchvision_answer(item: dict[str, object]) -> TorchvisionAnswer:
    metadata = item["metadata"]
    assert isinstance(metadata, dict)
    url = str(item["download_info"]["url"])  # type: ignore[index]
    requires = applying(metadata.get("requires_dist") or [], "x86_64", "3.12")
    torch = next((str(r.specifier) for r in requires if r.name == "torch"), "")
    return TorchvisionAnswer(url.rsplit("/", 1)[-1], metadata.get("requires_python"), torch)


def _after(version: str, oldest: str) -> bool:
    return re.fullmatch(r"[\d.]+", version) is not None and Version.parse(version) >= Version.parse(
        oldest
    )


def scan_pythons(pip: Pip, pool: concurrent.futures.Executor) -> dict[str, dict[str, list[str]]]:
    """torch version -> platform -> the Pythons pip finds a wheel for."""
    jobs = {
        (arch, python): pool.submit(pip.versions, "torch", arch, python)
        for arch in PLATFORMS
        for python in PYTHONS
    }
    found: dict[str, dict[str, list[str]]] = {}
    for (arch, python), job in jobs.items():
        for version in job.result():
            if _after(version, OLDEST):
                found.setdefault(version, {}).setdefault(arch, []).append(python)
    return found


def ask_torch(
    pip: Pip, pool: concurrent.futures.Executor, found: dict[str, dict[str, list[str]]]
) -> dict[str, dict[str, PlatformAnswer]]:
    jobs = {}
    for version, platforms in found.items():
        for arch, pythons in platforms.items():
            for python in dict.fromkeys((pythons[0], pythons[-1])):
                jobs[(version, arch, python)] = pool.submit(
                    pip.resolve, "torch", version, arch, python
                )
    out: dict[str, dict[str, PlatformAnswer]] = {}
    for version, platforms in sorted(found.items(), key=lambda kv: Version.parse(kv[0])):
        out[version] = {}
        for arch, pythons in platforms.items():
            resolved = {
                python: wheel_answer(jobs[(version, arch, python)].result(), arch, python)
                for python in dict.fromkeys((pythons[0], pythons[-1]))
            }
            out[version][arch] = PlatformAnswer(tuple(pythons), resolved)
    return out


def ask_torchvision(pip: Pip, pool: concurrent.futures.Executor) -> dict[str, TorchvisionAnswer]:
    listed: dict[str, str] = {}
    for python in ("3.10", "3.8", "3.12"):
        for version in pip.versions("torchvision", "x86_64", python):
            if _after(version, TORCHVISION_OLDEST):
                listed.setdefault(version, python)
    jobs = {
        version: pool.submit(pip.resolve, "torchvision", version, "x86_64", python)
        for version, python in listed.items()
    }
    return {
        version: torchvision_answer(jobs[version].result())
        for version in sorted(jobs, key=Version.parse)
    }


def ask_pypi(pip: Pip, workers: int) -> PypiAnswers:
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        found = scan_pythons(pip, pool)
        torch = ask_torch(pip, pool, found)
        torchvision = ask_torchvision(pip, pool)
    return PypiAnswers(
        schema=1,
        checked=datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
        pip=pip.version(),
        index=INDEX,
        pythons_asked=PYTHONS,
        torch=torch,
        torchvision=torchvision,
    )


def read_cache(path: Path) -> PypiAnswers:
    try:
        return from_jsonable(PypiAnswers, json.loads(path.read_text(encoding="utf-8")), str(path))
    except (OSError, ValueError, CodecError) as error:
        raise SystemExit(f"check_compat: cannot read the cache {path}: {error}") from None


def write_cache(path: Path, answers: PypiAnswers) -> None:
    path.write_text(json.dumps(to_jsonable(answers), indent=1) + "\n", encoding="utf-8")


def default_cert() -> str:
    return next((c for c in CA_BUNDLES if Path(c).is_file()), CA_BUNDLES[0])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--offline", action="store_true", help="use the cache; ask nothing")
    parser.add_argument("--cache", type=Path, default=CACHE, help=f"default: {CACHE}")
    parser.add_argument("--cert", default=default_cert(), help="CA bundle for pip's --cert")
    parser.add_argument("--jobs", type=int, default=4, help="pip processes at once (default 4)")
    parser.add_argument(
        "--python", default=sys.executable, help="the interpreter whose pip is used"
    )
    parser.add_argument("--only", choices=("pypi", "gpus"), help="check one part (default: both)")
    parser.add_argument("--gpu-cache", type=Path, default=GPU_CACHE, help=f"default: {GPU_CACHE}")
    parser.add_argument(
        "--open-modules",
        type=Path,
        help="a git clone of NVIDIA/open-gpu-kernel-modules (default: clone it, blobs on demand)",
    )
    return parser.parse_args(argv)


def check_pypi(args: argparse.Namespace) -> int:
    if args.offline:
        answers = read_cache(args.cache)
    else:
        try:
            answers = ask_pypi(Pip(args.python, args.cert), max(1, args.jobs))
        except (PipFailed, subprocess.SubprocessError, OSError) as error:
            print(f"check_compat: could not ask PyPI: {error}", file=sys.stderr)
            return 2
        write_cache(args.cache, answers)
        print(f"wrote {args.cache} ({len(answers.torch)} torch releases, {answers.checked})")
    found = disagreements(load_table(), answers)
    for line in found:
        print(line)
    releases = len([v for v in answers.torch if Version.parse(v) >= Version.parse(OLDEST)])
    verdict = f"{len(found)} disagreement(s)" if found else "compat.yaml agrees with PyPI"
    print(f"{verdict}: {releases} torch releases, {len(answers.torchvision)} torchvision releases")
    return 1 if found else 0


def check_gpus(args: argparse.Namespace) -> int:
    table = load_table()
    if args.offline:
        try:
            lists = gpu_lists.parse(args.gpu_cache.read_text(encoding="utf-8"))
        except (OSError, ValueError, CodecError) as error:
            raise SystemExit(f"check_compat: cannot read {args.gpu_cache}: {error}") from None
    else:
        try:
            lists = read_lists(table, args.open_modules)
        except (nvidia_lists.ListsFailed, subprocess.SubprocessError, OSError) as error:
            print(f"check_compat: could not read NVIDIA's lists: {error}", file=sys.stderr)
            return 2
        args.gpu_cache.write_text(gpu_lists.dump(lists), encoding="utf-8")
        print(f"wrote {args.gpu_cache} ({len(lists.listed)} GPUs, {lists.checked})")
    for line in gpu_lists.report(table, lists):
        print(line)
    found = gpu_lists.disagreements(table, lists)
    for line in found:
        print(line)
    read = f"{len(lists.open.releases)} open-module and {len(lists.proprietary.releases)} driver READMEs"
    verdict = f"{len(found)} disagreement(s)" if found else "compat.yaml agrees with NVIDIA's lists"
    print(f"{verdict}: {len(table.gpu_listings)} GPUs, {read} (read {lists.checked})")
    return 1 if found else 0


def read_lists(table: CompatTable, open_modules: Path | None) -> gpu_lists.GpuListsRead:
    wanted = [row.device_id for row in table.gpu_listings]
    with tempfile.TemporaryDirectory() as scratch:
        git_dir = open_modules or nvidia_lists.clone_open_modules(Path(scratch) / "open.git")
        open_lists, open_ids = nvidia_lists.read_open(git_dir)
        closed_lists, closed_ids = nvidia_lists.read_proprietary(Path(scratch) / "apt")
    listed = {
        device: {
            "open": tuple(r for r in open_lists.releases if device in open_ids[r]),
            "proprietary": tuple(r for r in closed_lists.releases if device in closed_ids[r]),
        }
        for device in wanted
    }
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    return gpu_lists.GpuListsRead(1, today, open_lists, closed_lists, listed)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    codes = []
    if args.only in (None, "pypi"):
        codes.append(check_pypi(args))
    if args.only in (None, "gpus"):
        codes.append(check_gpus(args))
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())
