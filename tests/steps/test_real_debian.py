"""The plan as a real Debian root needs it (issue 15): headers when Debian has moved its kernel,
no second kernel's headers, the venv package, a repair that clears half-installed packages,
Debian's non-free components, and loading the driver without a reboot where nothing needs one."""

from __future__ import annotations

import dataclasses

from gpuwizard.core.download_pins import pip_for
from gpuwizard.core.facts import AptSource, Environment, HostFacts, NvmlGpu, NvmlOk, Package
from gpuwizard.core.ops import AptUpdate, Command
from gpuwizard.core.plan import WriteFile
from gpuwizard.core.request import SetupRequest
from gpuwizard.recommend.engine import recommend
from gpuwizard.recommend.planner import plan_for, selection_for
from gpuwizard.recommend.result import Recommendation
from gpuwizard.recommend.target import target_from_facts
from gpuwizard.steps import build_steps
from gpuwizard.steps.enable_debian_nonfree import sources_text
from gpuwizard.steps.install_python import UV
from gpuwizard.steps.reboot import driver_pending
from tests.conftest import facts_of

ENV = "/opt/gpuwizard/envs/pytorch"
T4 = "t4-debian12-fresh"
OLD, NEW = "6.1.0-37-cloud-amd64", "6.1.0-57-cloud-amd64"
NATIVE = SetupRequest(variant="cu126", driver_branch="535")


def planned(table, facts: HostFacts, choices: SetupRequest | None = None):
    result = recommend(table, target_from_facts(facts, table), choices or SetupRequest())
    assert isinstance(result, Recommendation)
    selection, plan = plan_for(facts, result, SetupRequest(), table)
    return selection, plan


def with_kernels(
    facts: HostFacts, running: str, installed: tuple[str, ...], headers: tuple[str, ...], offered
) -> HostFacts:
    boot = dataclasses.replace(
        facts.boot, kernel=running, installed_kernels=installed, kernels_with_headers=headers
    )
    installs = dataclasses.replace(facts.installs, archive_headers=offered)
    return dataclasses.replace(facts, boot=boot, installs=installs)


def runs(plan, step_id: str) -> list[tuple[str, ...]]:
    return [a.command().argv for a in plan.step(step_id).actions if not isinstance(a, WriteFile)]


# ----------------------------------------------------------------------------- headers (B1)
def test_headers_gone_from_the_archive_bring_the_newest_kernel_and_its_reboot_first(table):
    stale = with_kernels(facts_of(T4), OLD, (OLD,), (), ("linux-headers-cloud-amd64",))
    selection, plan = planned(table, stale)
    upgrade = runs(plan, "upgrade-kernel")
    assert upgrade[-1][-2:] == ("linux-image-cloud-amd64", "linux-headers-cloud-amd64")
    assert "gone from the archive" in plan.step("upgrade-kernel").title
    assert runs(plan, "reboot-kernel") == [("reboot",)]
    assert runs(plan, "install-headers")[-1][-1] == "linux-headers-cloud-amd64"
    every = [argv for s in plan.steps for argv in runs(plan, s.id)]
    assert not any(OLD in word for argv in every for word in argv)
    steps = {s.id: s for s in build_steps(selection, stale)}
    # After the upgrade: the new kernel and its headers are there, the reboot is still to come.
    upgraded = with_kernels(
        stale, OLD, (OLD, NEW), (NEW,), (f"linux-headers-{NEW}", "linux-headers-cloud-amd64")
    )
    assert steps["reboot-kernel"].plan(upgraded) == plan.step("reboot-kernel").actions
    assert not steps["upgrade-kernel"].check(upgraded).satisfied
    # After the reboot into it, nothing of this is left to do.
    rebooted = with_kernels(upgraded, NEW, (OLD, NEW), (NEW,), upgraded.installs.archive_headers)
    for step_id in ("upgrade-kernel", "reboot-kernel", "install-headers"):
        assert steps[step_id].check(rebooted).satisfied, step_id


def test_the_recommendation_says_so(table):
    stale = with_kernels(facts_of(T4), OLD, (OLD,), (), ("linux-headers-cloud-amd64",))
    result = recommend(table, target_from_facts(stale, table), SetupRequest())
    assert isinstance(result, Recommendation) and result.status == "ok_after_changes"
    assert any("gone from the archive" in change for change in result.changes)


def test_without_package_lists_the_headers_are_named_by_the_running_kernel(table):
    unknown = with_kernels(facts_of(T4), NEW, (NEW,), (), None)
    _, plan = planned(table, unknown)
    assert runs(plan, "install-headers")[-1][-1] == f"linux-headers-{NEW}"
    assert not plan.step("upgrade-kernel").actions


# ------------------------------------------------------------------------- recommends (B4)
def test_debian_dkms_drivers_go_without_recommends_and_say_why(table):
    for choices in (SetupRequest(), NATIVE):
        _, plan = planned(table, facts_of(T4), choices)
        install = runs(plan, "install-nvidia-driver")[-1]
        assert "--no-install-recommends" in install
        assert "DKMS would then build the module twice" in plan.step("install-nvidia-driver").why


def test_ubuntu_drivers_keep_their_recommends(table):
    _, plan = planned(table, facts_of("h100x8-ubuntu2204-fresh"))
    assert "--no-install-recommends" not in runs(plan, "install-nvidia-driver")[-1]


# ------------------------------------------------------------------------------- venv (B3)
def test_uv_makes_the_venv_from_the_system_python_without_its_venv_package(table):
    _, plan = planned(table, facts_of(T4))
    fetch, create, pip = runs(plan, "create-env")
    assert fetch[0] == "gpuwizard-fetch" and "--sha256" in fetch
    assert create == (UV, "venv", "--clear", "--python", "/usr/bin/python3.11", ENV)
    assert pip[:5] == (UV, "pip", "install", "--python", f"{ENV}/bin/python")
    assert pip[-3:] == ("--verify-hashes", "-r", "/var/cache/gpuwizard/pip-26.3.hashes.txt")
    hashes = next(a for a in plan.step("create-env").actions if isinstance(a, WriteFile))
    assert hashes.content == f"pip==26.3 --hash=sha256:{pip_for('3.11').sha256}\n"
    assert "uv (pinned, its SHA-256 checked) makes it" in plan.step("create-env").why


def test_without_uv_the_system_python_s_venv_package_is_installed_first_where_missing(
    table, monkeypatch
):
    monkeypatch.setattr("gpuwizard.steps.create_env.uv_runs", lambda arch: False)
    _, plan = planned(table, facts_of(T4))
    create = runs(plan, "create-env")
    assert create[-2][-1] == "python3.11-venv" and create[-1][1:4] == ("-I", "-m", "venv")
    installed = dataclasses.replace(
        facts_of(T4).installs,
        packages=(*facts_of(T4).installs.packages, Package("python3.11-venv", "3.11.2-6+deb12u9")),
    )
    _, again = planned(table, dataclasses.replace(facts_of(T4), installs=installed))
    assert [argv[1:4] for argv in runs(again, "create-env")] == [("-I", "-m", "venv")]


def test_a_half_made_environment_is_made_again(table):
    env = Environment(
        "/opt/gpuwizard/envs/pytorch", "venv", "3.11", {}, "it has no pip: it was left half made"
    )
    facts = facts_of(T4)
    broken = dataclasses.replace(
        facts, python=dataclasses.replace(facts.python, environments=(env,))
    )
    selection, plan = planned(table, broken)
    step = next(s for s in build_steps(selection, broken) if s.id == "create-env")
    assert "is broken" in step.check(broken).reason and plan.step("create-env").actions
    whole = dataclasses.replace(env, problem=None)
    fine = dataclasses.replace(
        facts, python=dataclasses.replace(facts.python, environments=(whole,))
    )
    assert step.check(fine).satisfied


# ------------------------------------------------------------------------ repair, pip (B6, B8)
def test_the_repair_reinstalls_half_installed_packages_and_never_removes(table):
    facts = facts_of(T4)
    broken = dataclasses.replace(facts, boot=dataclasses.replace(facts.boot, dpkg_interrupted=True))
    _, plan = planned(table, broken)
    configure, fix = runs(plan, "repair-dpkg")
    assert configure[-2:] == ("--configure", "-a")
    assert fix[0] == "apt-get" and fix[-2:] == ("-f", "install") and "--no-remove" in fix


def test_the_pip_upgrade_must_reach_the_index_where_pip_installs_torch(table, monkeypatch):
    monkeypatch.setattr("gpuwizard.steps.install_torch.uv_runs", lambda arch: False)
    _, plan = planned(table, facts_of(T4))
    assert "--force-reinstall" in runs(plan, "install-torch")[0]


def test_uv_installs_torch_with_no_pip_upgrade(table):
    _, plan = planned(table, facts_of(T4))
    fetch, install = runs(plan, "install-torch")
    assert fetch[0] == "gpuwizard-fetch" and install[:3] == (UV, "pip", "install")
    assert not any("pip==" in word for word in install)


# --------------------------------------------------------------------------- Debian non-free
def test_debian_s_own_driver_enables_non_free_from_the_mirrors_in_use(table):
    _, plan = planned(table, facts_of(T4), NATIVE)
    write, update = plan.step("enable-debian-nonfree").actions
    assert isinstance(write, WriteFile) and isinstance(update, AptUpdate)
    assert (
        "URIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\n" in write.content
    )
    assert (
        "Suites: bookworm-security\nComponents: contrib non-free non-free-firmware" in write.content
    )
    assert runs(plan, "install-nvidia-driver")[-1][-4:] == (
        "nvidia-kernel-dkms",
        "libcuda1",
        "nvidia-smi",
        "nvidia-persistenced",
    )
    enabled = (
        *facts_of(T4).installs.apt_sources,
        AptSource("http://m", "bookworm", ("contrib", "non-free", "non-free-firmware")),
    )
    facts = dataclasses.replace(
        facts_of(T4), installs=dataclasses.replace(facts_of(T4).installs, apt_sources=enabled)
    )
    _, again = planned(table, facts, NATIVE)
    assert not again.step("enable-debian-nonfree").actions


def test_sources_without_a_mirror_fall_back_to_debian_s_own():
    text = sources_text((), "trixie")
    assert "URIs: http://deb.debian.org/debian\nSuites: trixie trixie-updates" in text
    assert "URIs: http://deb.debian.org/debian-security\nSuites: trixie-security" in text


# ------------------------------------------------------------------ fewer reboots (§4)
def test_where_nothing_needs_a_reboot_the_driver_is_loaded_now(table):
    _, plan = planned(table, facts_of(T4))
    ids = [s.id for s in plan.steps]
    assert (
        ids.index("install-nvidia-driver")
        < ids.index("load-nvidia-driver")
        == ids.index("reboot") - 1
    )
    assert runs(plan, "load-nvidia-driver") == [("modprobe", "nvidia"), ("modprobe", "nvidia_uvm")]
    assert all(
        isinstance(a, Command) and a.ok_codes == (0, 1)
        for a in plan.step("load-nvidia-driver").actions
    )
    assert "only if the driver could not be loaded" in plan.step("reboot").title


def test_nouveau_a_pending_kernel_or_a_secure_boot_key_keep_the_reboot(table):
    for name in (
        "h100x8-ubuntu2204-fresh",
        "a100x4-ubuntu2004-fresh",
        "rtx5090-ubuntu2404-secureboot",
    ):
        _, plan = planned(table, facts_of(name))
        assert "load-nvidia-driver" not in [s.id for s in plan.steps], name
        assert plan.step("reboot").title == "Reboot", name


def test_the_reboot_is_skipped_once_the_driver_is_loaded(table):
    selection, _ = planned(table, facts_of(T4), NATIVE)
    facts = facts_of(T4)
    gpu = NvmlGpu(0, "0000:00:04.0", "Tesla T4", 15360)
    loaded = dataclasses.replace(
        facts.boot,
        nvml=NvmlOk("535.309.01", "12.2", (gpu,)),
        modules=("nvidia",),
        reboot_required=True,
        reboot_required_packages=("nvidia-kernel-dkms",),
    )
    pending = driver_pending(selection.driver.branch)
    assert pending(dataclasses.replace(facts, boot=loaded)) == []
    kernel = dataclasses.replace(
        loaded, reboot_required_packages=("linux-image-6.1.0-58-cloud-amd64",)
    )
    assert pending(dataclasses.replace(facts, boot=kernel)) == ["a package asked for a reboot"]
    steps = {s.id: s for s in build_steps(selection, facts)}
    assert steps["load-nvidia-driver"].check(dataclasses.replace(facts, boot=loaded)).satisfied
    failed = steps["load-nvidia-driver"].verify(facts)
    assert failed.satisfied and "the reboot step loads it" in failed.reason
    assert (
        selection_for(
            facts, recommend(table, target_from_facts(facts, table), NATIVE), SetupRequest(), table
        ).driver.source
        == "debian-archive"
    )  # type: ignore[arg-type]
