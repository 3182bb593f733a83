"""Steps are pure declarations: plan() is empty exactly when check() holds, on every host."""

from __future__ import annotations

import dataclasses
import re

import pytest

from gpuwizard.core.facts import NvmlUnavailable, Package
from gpuwizard.core.ops import AptInstall, AptUpdate, Command, Download, Sha256, UvPipInstall
from gpuwizard.core.plan import APT_ENV, Action, WriteFile
from gpuwizard.core.request import SetupRequest
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.planner import OptionsError, plan_for, selection_for
from gpuwizard.recommend.result import Recommendation
from gpuwizard.recommend.target import target_from_facts
from gpuwizard.steps import build_steps
from gpuwizard.steps.base import PlanError
from gpuwizard.steps.install_docker import merged_daemon_json
from gpuwizard.steps.install_python import UV
from tests.conftest import PROFILE_NAMES, facts_of

INSTALLABLE = [n for n in PROFILE_NAMES if n != "nogpu-ubuntu2204"]
ALL_OPTIONS = SetupRequest(
    needs_nvcc=True, cudnn=True, docker=True, dcgm=True, nccl=True, hold_driver=True
)


def argv(action: Action) -> tuple[str, ...]:
    assert not isinstance(action, WriteFile)
    return action.command().argv


def recommendation(table, name: str, needs_nvcc: bool = False) -> Recommendation:
    facts = facts_of(name)
    result = recommend(table, target_from_facts(facts, table), SetupRequest(needs_nvcc=needs_nvcc))
    assert isinstance(result, Recommendation)
    return result


DEFAULTS = SetupRequest()


def steps_for(table, name: str, options: SetupRequest = DEFAULTS):
    facts = facts_of(name)
    selection = selection_for(
        facts, recommendation(table, name, options.needs_nvcc), options, table
    )
    return facts, build_steps(selection, facts)


@pytest.mark.parametrize(
    "options",
    [SetupRequest(), ALL_OPTIONS, SetupRequest(env_kind="conda")],
    ids=["defaults", "everything", "conda"],
)
@pytest.mark.parametrize("name", INSTALLABLE)
def test_plan_is_empty_exactly_when_check_is_satisfied(table, name, options):
    facts, steps = steps_for(table, name, options)
    for step in steps:
        assert (step.plan(facts) == ()) == step.check(facts).satisfied, step.id
        assert step.check(facts).reason, step.id


@pytest.mark.parametrize("name", INSTALLABLE)
def test_every_step_says_why(table, name):
    _, steps = steps_for(table, name, ALL_OPTIONS)
    for step in steps:
        assert len(step.why) > 40 and step.title, step.id


def test_a_fresh_host_plan_in_order(table):
    _, plan = plan_for(
        facts_of("h100x8-ubuntu2204-fresh"),
        recommendation(table, "h100x8-ubuntu2204-fresh"),
        SetupRequest(),
        table,
    )
    todo = [s.id for s in plan.steps if not s.satisfied]
    assert todo == [
        "blacklist-nouveau",
        "install-nvidia-driver",
        "install-fabric-manager",
        "enable-persistence",
        "reboot",
        "create-env",
        "install-torch",
        "verify-torch",
    ]
    assert plan.step("reboot").reboot and plan.step("blacklist-nouveau").needs_reboot


def test_apt_runs_non_interactive_with_a_lock_timeout(table):
    facts, steps = steps_for(table, "h100x8-ubuntu2204-fresh")
    driver = next(s for s in steps if s.id == "install-nvidia-driver")
    update, install = driver.plan(facts)
    assert isinstance(install, AptInstall) and install.command().env == APT_ENV
    assert "DPkg::Lock::Timeout=600" in argv(install) and "--force-confold" in " ".join(
        argv(install)
    )
    assert {"nvidia-driver-580-server-open", "nvidia-utils-580-server"} <= set(argv(install))
    assert isinstance(update, AptUpdate), "the runner retries it while the lists are locked"


def test_a_pending_kernel_is_applied_and_rebooted_first(table):
    facts, steps = steps_for(table, "a100x4-ubuntu2004-fresh")
    ids = [s.id for s in steps]
    assert (
        ids.index("upgrade-kernel")
        < ids.index("reboot-kernel")
        < ids.index("install-headers")
        < ids.index("install-nvidia-driver")
    )
    headers = next(s for s in steps if s.id == "install-headers")
    assert headers.check(facts).satisfied  # headers exist for 5.4.0-218, the kernel that boots next
    assert not next(s for s in steps if s.id == "upgrade-kernel").check(facts).satisfied


def test_missing_headers_are_installed_for_the_running_kernel(table):
    facts, steps = steps_for(table, "t4-debian12-fresh")
    headers = next(s for s in steps if s.id == "install-headers")
    assert any(
        "linux-headers-6.1.0-57-cloud-amd64" in argv(a)
        for a in headers.plan(facts)
        if not isinstance(a, WriteFile)
    )


def test_nouveau_blacklist_writes_the_file_and_rebuilds_the_initramfs(table):
    facts, steps = steps_for(table, "a100x4-ubuntu2004-fresh")
    write, rebuild = next(s for s in steps if s.id == "blacklist-nouveau").plan(facts)
    assert (
        isinstance(write, WriteFile)
        and "blacklist nouveau\noptions nouveau modeset=0" in write.content
    )
    assert isinstance(rebuild, Command) and argv(rebuild)[0] == "update-initramfs"


def test_rocky_uses_dracut_and_a_dnf_module_stream(table):
    facts, steps = steps_for(table, "l40sx4-rocky9-fresh")
    plans = {s.id: s.plan(facts) for s in steps}
    assert argv(plans["blacklist-nouveau"][1])[0] == "dracut"
    assert argv(plans["install-nvidia-driver"][0])[-1] == "nvidia-driver:580-open"
    key, repo = plans["add-cuda-repo"]
    assert isinstance(key, Download) and argv(key)[1].endswith("/rhel9/x86_64/D42D0685.pub")
    assert argv(key)[3:5] == ("--fingerprint", "610C7B14E068A878070DA4E99CD0A493D42D0685")
    assert isinstance(repo, WriteFile) and repo.path == "/etc/yum.repos.d/cuda-rhel9-x86_64.repo"
    assert "gpgcheck=1\ngpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-cuda\n" in repo.content
    assert argv(plans["install-python"][0])[-1] == "python3.12"


@pytest.mark.parametrize("version", ["10.1", "11.0"])
def test_rocky_10_holds_the_branch_with_dnf_versionlock_not_a_module_stream(table, version):
    # RHEL 10 and its rebuilds have no dnf module streams (NVIDIA's guide, R620 edition); an
    # unknown newer Rocky is treated as the newest known one
    facts = facts_of("l40sx4-rocky9-fresh")
    assert facts.os is not None
    facts = dataclasses.replace(facts, os=dataclasses.replace(facts.os, version_id=version))
    rec = recommend(table, target_from_facts(facts, table))
    steps = build_steps(selection_for(facts, rec, SetupRequest(), table), facts)
    plans = {s.id: s.plan(facts) for s in steps}
    argvs = [argv(a) for a in plans["install-nvidia-driver"] if not isinstance(a, WriteFile)]
    assert argvs[0] == ("dnf", "versionlock", "add", "*nvidia*580*")
    assert not any("module" in argv for argv in argvs)
    repo_files = [a for a in plans["add-cuda-repo"] if isinstance(a, WriteFile)]
    assert any("/compute/cuda/repos/rhel10/x86_64" in a.content for a in repo_files)


def test_secure_boot_on_ubuntu_uses_signed_modules_without_mok(table):
    _, steps = steps_for(table, "rtx5090-ubuntu2404-secureboot")
    ids = [s.id for s in steps]
    assert "enroll-mok" not in ids and "install-headers" not in ids


def test_secure_boot_with_dkms_asks_for_a_mok_password(table):
    facts = facts_of("t4-debian12-fresh")
    facts = dataclasses.replace(facts, boot=dataclasses.replace(facts.boot, secure_boot="enabled"))
    rec = recommend(table, target_from_facts(facts, table))
    steps = build_steps(selection_for(facts, rec, SetupRequest(), table), facts)
    mok = next(s for s in steps if s.id == "enroll-mok")
    generate, importing = mok.plan(facts)
    assert argv(generate) == ("dkms", "generate_mok")
    assert {r.name for r in importing.answers.values()} == {"mok-password"}
    assert mok.needs_reboot and "console" in mok.why


def test_a_kept_driver_skips_the_whole_driver_side(table):
    _, steps = steps_for(table, "v100x4-ubuntu2204-driver535")
    ids = [s.id for s in steps]
    assert (
        "install-nvidia-driver" not in ids
        and "reboot" not in ids
        and "blacklist-nouveau" not in ids
    )
    assert ids[-3:] == ["create-env", "install-torch", "verify-torch"]


def test_wsl_only_sets_up_python(table):
    _, steps = steps_for(table, "wsl2-ubuntu2204-rtx4090")
    assert [s.id for s in steps] == ["repair-dpkg", "create-env", "install-torch", "verify-torch"]


def in_a_container(name: str):  # type: ignore[no-untyped-def]
    facts = facts_of(name)
    return dataclasses.replace(
        facts, platform=dataclasses.replace(facts.platform, container="docker")
    )


def test_a_container_plans_no_driver_steps_whatever_the_selection_says(table):
    """Issue 26: the driver belongs to the container's host. Even a selection made elsewhere
    (an answers file, a fresh server's recommendation) that installs one plans no kernel, driver,
    module or reboot step inside a container."""
    installing = selection_for(
        facts_of("a100x4-ubuntu2004-fresh"),
        recommendation(table, "a100x4-ubuntu2004-fresh"),
        DEFAULTS,
        table,
    )
    assert installing.driver.installs
    ids = [s.id for s in build_steps(installing, in_a_container("a100x4-ubuntu2004-fresh"))]
    driver_side = {"upgrade-kernel", "reboot-kernel", "install-headers", "blacklist-nouveau", "install-nvidia-driver",
                   "load-nvidia-driver", "reboot", "enable-persistence", "hold-nvidia-packages", "remove-runfile-driver"}  # fmt: skip
    assert not driver_side & set(ids), ids
    assert ids[-3:] == ["create-env", "install-torch", "verify-torch"]


def test_a_container_whose_driver_libraries_changed_plans_no_reboot(table):
    """A library/module mismatch on a kept driver asks for a reboot on a machine of its own; a
    container cannot reboot its host's driver."""
    facts = facts_of("h200-ubuntu2404-driver570")
    mismatched = dataclasses.replace(facts, boot=dataclasses.replace(facts.boot, nvml=NvmlUnavailable(
        "driver/library version mismatch: the driver was updated without a reboot")))  # fmt: skip
    keep = selection_for(facts, recommendation(table, "h200-ubuntu2404-driver570"), DEFAULTS, table)
    assert "reboot-driver-update" in [s.id for s in build_steps(keep, mismatched)]
    boxed = dataclasses.replace(
        mismatched, platform=dataclasses.replace(facts.platform, container="docker")
    )
    assert "reboot-driver-update" not in [s.id for s in build_steps(keep, boxed)]


def test_the_planner_refuses_a_driver_install_in_a_container(table):
    with pytest.raises(OptionsError, match="docker container the driver belongs to the host"):
        selection_for(
            in_a_container("a100x4-ubuntu2004-fresh"),
            recommendation(table, "a100x4-ubuntu2004-fresh"),
            DEFAULTS,
            table,
        )


def test_the_h200_microvm_keeps_its_hosts_driver_and_sets_up_python_only(table):
    _, steps = steps_for(table, "h200-vm-ubuntu2404-preinstalled")
    assert [s.id for s in steps] == ["repair-dpkg", "create-env", "install-torch", "verify-torch"]


def test_python_38_gets_a_standalone_python_from_a_pinned_uv(table):
    facts, steps = steps_for(table, "a100x4-ubuntu2004-fresh")
    python = next(s for s in steps if s.id == "install-python")
    fetch, install = python.plan(facts)
    assert argv(fetch)[0] == "gpuwizard-fetch" and "--sha256" in argv(fetch)
    assert argv(install)[1:] == ("python", "install", "3.12")


def test_torch_is_pinned_from_its_index(table):
    facts, steps = steps_for(table, "a100x4-ubuntu2004-fresh")  # cu126: PyTorch's own index
    fetch, install = next(s for s in steps if s.id == "install-torch").plan(facts)
    assert argv(fetch)[0] == "gpuwizard-fetch" and "--sha256" in argv(fetch), "uv is pinned"
    assert isinstance(install, UvPipInstall)
    assert argv(install)[:10] == (
        UV,
        "pip",
        "install",
        "--python",
        f"{install.env}/bin/python",
        "--reinstall-package",  # another CUDA build of 2.14.1 would satisfy ==2.14.1: kept
        "torch",
        "--reinstall-package",
        "torchvision",
        "--index-url",
    )
    assert argv(install)[-3:] == (
        "https://download.pytorch.org/whl/cu126",
        "torch==2.14.1",
        "torchvision==0.29.1",
    )


def test_pypis_default_torch_build_is_installed_by_uv_against_pinned_hashes(table):
    facts, steps = steps_for(table, "h100x8-ubuntu2204-fresh")  # cu130: PyPI's default build
    fetch, hashes, install = next(s for s in steps if s.id == "install-torch").plan(facts)
    assert isinstance(fetch, Download) and fetch.dest == UV and isinstance(fetch.check, Sha256)
    assert isinstance(hashes, WriteFile)
    assert hashes.path == "/var/cache/gpuwizard/torch-2.14.1-cu130.hashes.txt"
    # every requirement of the file is the wanted set, each with the hash of its one wheel for
    # this environment's Python (3.10, the system's) and CPU: uv installs them all
    assert re.findall(r"^(\S+==\S+) --hash=sha256:[0-9a-f]{64}$", hashes.content, re.MULTILINE) == [
        "torch==2.14.1",
        "torchvision==0.29.1",
    ]
    assert "cp310-cp310-manylinux_2_28_x86_64" in hashes.content and "cp312" not in hashes.content
    assert argv(install)[-5:] == (
        "--index-url",
        "https://pypi.org/simple",
        "--verify-hashes",
        "-r",
        hashes.path,
    )
    assert "--require-hashes" not in argv(install), "uv would then want the dependencies' hashes"


def test_without_a_pinned_uv_for_the_cpu_pip_installs_torch_from_checked_downloads(
    table, monkeypatch
):
    facts, steps = steps_for(table, "h100x8-ubuntu2204-fresh")
    step = next(s for s in steps if s.id == "install-torch")
    # uv's wheels are pinned for both CPUs torch has hashed wheels for: as if one were not
    monkeypatch.setattr("gpuwizard.steps.install_torch.uv_runs", lambda arch: False)
    pip, hashes, download, install = step.plan(facts)
    folder = "/var/cache/gpuwizard/torch-2.14.1-cu130"
    assert argv(pip)[-1] == "pip==26.3", "pip itself is pinned"
    assert isinstance(hashes, WriteFile) and hashes.path == f"{folder}.hashes.txt"
    assert "--require-hashes" in argv(download) and "--no-deps" in argv(download)
    assert argv(download)[-4:] == ("--dest", folder, "-r", hashes.path)
    assert argv(install)[-2:] == (
        f"{folder}/torch-2.14.1-cp310-cp310-manylinux_2_28_x86_64.whl",
        f"{folder}/torchvision-0.29.1-cp310-cp310-manylinux_2_28_x86_64.whl",
    )
    assert "pip installs it: gpuwizard pins no uv for x86_64" in step.why


def test_installed_torch_of_another_build_is_not_accepted(table):
    from gpuwizard.steps.install_torch import installed_matches

    assert installed_matches("2.14.1+cu130", "2.14.1", "cu130")
    assert installed_matches("2.14.1", "2.14.1", "cu130")
    assert not installed_matches("2.14.1+cu126", "2.14.1", "cu130")
    assert not installed_matches("2.13.0+cu130", "2.14.1", "cu130")


def test_cuda_toolkit_goes_to_profile_d_not_bashrc(table):
    facts, steps = steps_for(table, "h100x8-ubuntu2204-fresh", SetupRequest(needs_nvcc=True))
    actions = next(s for s in steps if s.id == "install-cuda-toolkit").plan(facts)
    write = actions[-1]
    assert isinstance(write, WriteFile) and write.path == "/etc/profile.d/gpuwizard-cuda.sh"
    assert "/usr/local/cuda-13.0/bin" in write.content


def test_daemon_json_merge_keeps_every_key():
    merged = merged_daemon_json(
        '{"data-root": "/data/docker", "registry-mirrors": ["https://m"], "runtimes": {"runc2": {"path": "x"}}}'
    )
    assert '"data-root": "/data/docker"' in merged and '"registry-mirrors"' in merged
    assert '"runc2"' in merged and '"nvidia"' in merged


@pytest.mark.parametrize("content", ["{not json", "[1, 2]"])
def test_an_invalid_daemon_json_is_never_overwritten(content):
    with pytest.raises(PlanError, match="left untouched"):
        merged_daemon_json(content)


def test_packages_installed_make_the_driver_step_done(table):
    facts, steps = steps_for(table, "h100x8-ubuntu2204-fresh")
    driver = next(s for s in steps if s.id == "install-nvidia-driver")
    names = driver.driver.packages
    installed = dataclasses.replace(
        facts.installs,
        packages=(*facts.installs.packages, *(Package(n, "580.95.05-1") for n in names)),
    )
    facts = dataclasses.replace(facts, installs=installed)
    assert driver.check(facts).satisfied
    assert not driver.verify(facts).satisfied  # no module built yet for the kernel that boots next
    assert "make.log" in driver.verify(facts).reason


@pytest.mark.parametrize("name", ["../etc", "a b", "", "x" * 65, "-rf", "$(touch pwn)"])
def test_a_hostile_environment_name_is_refused(table, name):
    with pytest.raises(OptionsError, match="environment name"):
        selection_for(
            facts_of("h100x8-ubuntu2204-fresh"),
            recommendation(table, "h100x8-ubuntu2204-fresh"),
            SetupRequest(env_name=name),
            table,
        )


def test_the_plan_round_trips_through_json(table):
    from gpuwizard.core.plan import Plan

    _, plan = plan_for(
        facts_of("a100x4-ubuntu2004-fresh"),
        recommendation(table, "a100x4-ubuntu2004-fresh"),
        ALL_OPTIONS,
        table,
    )
    assert Plan.from_json(plan.to_json()) == plan
