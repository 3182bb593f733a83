"""Every file a step or an export downloads is pinned in download_pins.yaml, with its source and date
(issues 14 and 19): a download step with no pin fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuwizard.core.download_pins import (
    UNCONFIRMED,
    Unpinned,
    load_pins,
    pin_for,
    pip_for,
    torch_wheels,
)
from gpuwizard.core.ops import Download, Fingerprint, NoPin, Sha256
from gpuwizard.core.selection import EnvChoice
from gpuwizard.recommend.table import load_table
from gpuwizard.runner.fetch import parse
from gpuwizard.steps.add_cuda_repo import AddCudaRepo
from gpuwizard.steps.base import fetch
from gpuwizard.steps.create_env import CreateEnv
from gpuwizard.steps.install_docker import InstallContainerToolkit, InstallDocker
from gpuwizard.steps.install_python import InstallPython
from tests.conftest import facts_of
from tests.export.conftest import ALL_OPTIONS, PROFILES, source_for

BARE = facts_of("nogpu-ubuntu2204")
"""A machine with nothing installed: every step plans its downloads on it."""
REPO_ARCHES = (("x86_64", "x86_64"), ("aarch64", "sbsa"))


def every_download_step():  # type: ignore[no-untyped-def]
    """Each step that downloads, for every OS of the compat table, CPU and option."""
    for row in load_table().operating_systems:
        family = "rhel" if row.id in ("rocky", "rhel", "almalinux") else "debian"
        for _, repo_arch in REPO_ARCHES:
            yield AddCudaRepo(family, row.cuda_repo, repo_arch)
    for arch, _ in REPO_ARCHES:
        yield CreateEnv(EnvChoice("conda", "/opt/gpuwizard/miniforge/envs/x", "3.12"), arch)
        standalone = EnvChoice("venv", "/opt/gpuwizard/envs/x", "3.12", "standalone")
        yield InstallPython("debian", standalone, arch)
    yield InstallDocker("rhel")  # Debian's docker.io comes from the distribution
    for family in ("debian", "rhel"):
        yield InstallContainerToolkit(family)


def downloads_of(actions) -> list[Download]:  # type: ignore[no-untyped-def]
    return [a for a in actions if isinstance(a, Download)]


def check_download(run: Download, arch: str | None = None) -> None:
    url = run.url
    pin = pin_for(url, arch)
    if pin.sha256:
        assert run.check == Sha256(pin.sha256), url
    elif pin.fingerprint:
        assert run.check == Fingerprint(pin.fingerprint), url
    else:
        assert pin.status == UNCONFIRMED and run.check == NoPin(), url


@pytest.mark.parametrize(
    "step",
    list(every_download_step()),
    ids=lambda s: (
        f"{s.id}-{getattr(s, 'cuda_repo', '')}{getattr(s, 'family', '')}-{getattr(s, 'arch', getattr(s, 'repo_arch', ''))}"
    ),
)
def test_every_download_a_step_can_plan_carries_its_pin(step) -> None:  # type: ignore[no-untyped-def]
    runs = downloads_of(step.plan(BARE))
    assert runs, f"{step.id} plans no download here: the list above is stale"
    for run in runs:
        arch = getattr(step, "arch", None) if run.url.startswith("pypi:") else None
        check_download(run, arch)


@pytest.mark.parametrize(
    "step",
    [s for s in every_download_step() if isinstance(s, (AddCudaRepo, InstallDocker, InstallContainerToolkit))],
    ids=lambda s: f"{s.id}-{getattr(s, 'cuda_repo', '')}{getattr(s, 'family', '')}-{getattr(s, 'repo_arch', '')}",
)  # fmt: skip
def test_every_planned_key_is_fetched_as_a_key_with_options_the_downloader_takes(step) -> None:  # type: ignore[no-untyped-def]
    """Debian 13's and Ubuntu 26.04's --unpinned --dearmor were refused by gpuwizard-fetch, so
    their add-cuda-repo step could never succeed (issue 28): every key a step fetches is marked
    a key (stored alone, binary for apt, armoured for dnf) and its options parse."""
    for run in downloads_of(step.plan(BARE)):
        assert run.is_key, run.url
        _, check = parse(list(run.command().argv[1:]))
        assert check.key == ("binary" if run.dest.startswith("/usr/share/keyrings/") else "armored")


@pytest.mark.parametrize("profile", PROFILES)
def test_every_download_of_every_built_in_plan_carries_its_pin(profile: str) -> None:
    for source in (source_for(profile), source_for(profile, ALL_OPTIONS)):
        for step in source.plan.steps:
            for run in downloads_of(step.actions):
                check_download(run, source.selection.arch if run.url.startswith("pypi:") else None)


def test_a_download_with_no_pin_cannot_be_planned() -> None:
    with pytest.raises(Unpinned, match=r"no pin for https://example\.com/new-installer\.sh"):
        fetch("https://example.com/new-installer.sh", "/var/cache/gpuwizard/new-installer.sh")
    with pytest.raises(Unpinned):
        pin_for("pypi:uv==0.13.9", "ppc64le")


def test_every_pin_says_where_it_came_from_and_when() -> None:
    pins = load_pins()
    for pin in pins.downloads:
        assert pin.source and re.fullmatch(r"\d{4}-\d{2}-\d{2}", pin.date), pin.url
        assert pin.url.startswith(("https://", "pypi:")), pin.url
        assert pin.confirmed or pin.status == UNCONFIRMED, pin.url
    for pip in pins.pips:
        assert pip.source and re.fullmatch(r"\d{4}-\d{2}-\d{2}", pip.date)
    assert pins.images_unconfirmed, "an image without a digest says why"


def test_pip_is_pinned_for_every_python_the_compat_table_uses() -> None:
    pythons = {p for r in load_table().torch_releases for p in r.python}
    assert pip_for("3.8").version == "25.0.1"
    assert pip_for("3.9").version == "26.0.1"
    for python in pythons:
        assert pip_for(python).version


def test_the_bootstrap_script_pins_uv_as_pins_yaml_does() -> None:
    text = (Path(__file__).parents[2] / "tools" / "bootstrap.sh").read_text()
    assert f'UV_SHA256_X86_64="{pin_for("pypi:uv==0.13.9", "x86_64").sha256}"' in text
    assert f'UV_SHA256_AARCH64="{pin_for("pypi:uv==0.13.9", "aarch64").sha256}"' in text
    assert f'PIP_VERSION="{pip_for("3.10").version}"' in text


def test_the_torch_hashes_name_a_pinned_wheel_for_every_python_of_the_set() -> None:
    release = next(r for r in load_table().torch_releases if r.version == "2.14.1")
    wheels = torch_wheels(release.version, release.default)
    assert wheels is not None
    low, high = (int(v.split(".")[1]) for v in release.python)
    for minor in range(low, high + 1):
        for arch in ("x86_64", "aarch64"):
            for package in ("torch", "torchvision"):
                assert wheels.wheel(package, f"3.{minor}", arch), (package, minor, arch)
    assert torch_wheels("2.14.1", "cu126") is None, "PyTorch's own index: no hashes here"


def test_an_environments_hashes_file_holds_its_own_wheels_only() -> None:
    """deploy.sh carries the file install-torch writes, and cloud-init's user-data holds 16 KiB:
    the whole file (every Python, both CPUs) is ~6 KB, one environment's a tenth of it."""
    wheels = torch_wheels("2.14.1", "cu130")
    assert wheels is not None
    text = wheels.requirements_for(("torch", "torchvision"), "3.12", "x86_64")
    assert text is not None and len(text) < 700 < len(wheels.text) / 8
    required = [line for line in text.splitlines() if not line.startswith("#")]
    assert required == [
        f"torch==2.14.1 --hash=sha256:{wheels.sha256[wheels.wheel('torch', '3.12', 'x86_64') or '']}",
        f"torchvision==0.29.1 --hash=sha256:{wheels.sha256[wheels.wheel('torchvision', '3.12', 'x86_64') or '']}",
    ]
    for line in required:  # the same hashes as the whole file's, for this Python and CPU
        assert line.split("--hash=")[1] in wheels.text
    assert (
        "cp312-cp312-manylinux_2_28_x86_64" in text
        and "aarch64" not in text
        and "cp311" not in text
    )
    assert wheels.requirements_for(("torch", "torchvision"), "3.9", "x86_64") is None
    assert wheels.requirements_for(("torch", "torchaudio"), "3.12", "x86_64") is None
