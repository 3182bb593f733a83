"""Quick chroot tier: what the real archive and a real Debian root showed (REAL-ROOT.md §3),
one test per defect, each run against the real thing.

The runner's own steps run through the real runner (``drive.run_runner``) where a step's
verification is the point; single planned commands run as the executor would run them.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path
from unittest import mock

import pytest

from gpuwizard.core.ops import AptInstall, Command, PipInstall
from gpuwizard.core.plan import APT_ENV, SCHEMA, Plan, WriteFile
from gpuwizard.core.request import SetupRequest
from gpuwizard.export.bash import render_bash
from gpuwizard.export.source import ExportSource
from gpuwizard.machine.detect import detect_host
from gpuwizard.machine.detect.recording import recorded_host
from gpuwizard.steps.base import step_plan
from gpuwizard.steps.blacklist_nouveau import BlacklistNouveau
from gpuwizard.steps.enable_debian_nonfree import EnableDebianNonFree
from gpuwizard.steps.install_python import InstallPython
from tests.chroot.archive import ENV, apply_sources_step, check_plan
from tests.chroot.conftest import T4, MachineFactory, timed
from tests.chroot.drive import Planned, facts_of, plan_on, run_runner, start_run
from tests.chroot.machine import ChrootMachine
from tests.conftest import facts_of as recorded_facts
from tests.conftest import profile_dir

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ENV_PATH = "/opt/gpuwizard/envs/pytorch"


@pytest.fixture(scope="module")
def t4(machines: MachineFactory) -> ChrootMachine:
    machine = machines("defects")
    machine.run(["apt-get", "-q", "update"], env=ENV, check=True)
    return machine


def only(planned: Planned, *ids: str) -> Planned:
    """The same plan with just these steps (the runner runs and verifies them as reviewed)."""
    steps = tuple(s for s in planned.plan.steps if s.id in ids)
    return dataclasses.replace(planned, plan=dataclasses.replace(planned.plan, steps=steps))


def run_steps(machine: ChrootMachine, planned: Planned, *ids: str) -> int:
    start_run(machine, only(planned, *ids))
    return run_runner(machine)


# ------------------------------------------------------------------------------------ B3
def test_b3_the_planned_environment_is_created_on_a_minimal_debian(t4):
    """uv makes it (no python3.11-venv needed); the venv works (pip runs in it)."""
    planned = plan_on(t4, SetupRequest(variant="cu126", driver_branch="535"))
    with timed("defects: create-env through the runner"):
        assert run_steps(t4, planned, "create-env") == 0, (
            t4.state_dir / "events.jsonl"
        ).read_text()[-3000:]
    env = next(e for e in facts_of(t4).python.environments if e.path == ENV_PATH)
    assert env.problem is None
    t4.run([f"{ENV_PATH}/bin/python", "-m", "pip", "--version"], check=True)


def test_b3_a_half_made_environment_is_seen_as_broken_and_made_again(t4):
    t4.run(["/usr/bin/python3.11", "-m", "venv", "--clear", "--without-pip", ENV_PATH], check=True)
    env = next(e for e in facts_of(t4).python.environments if e.path == ENV_PATH)
    assert env.problem and "pip" in env.problem
    planned = plan_on(t4, SetupRequest(variant="cu126", driver_branch="535"))
    create = planned.plan.step("create-env")
    assert create.actions, "a broken environment must not count as created"
    assert run_steps(t4, planned, "create-env") == 0
    assert next(e for e in facts_of(t4).python.environments if e.path == ENV_PATH).problem is None


# ------------------------------------------------------------------------------------ B8
def test_b8_the_pip_upgrade_fails_when_the_index_cannot_be_reached(t4):
    """The planned pip upgrade, in a working venv: it must fail when the index is unreachable.
    Planned where pip installs PyTorch: a CPU gpuwizard pins no uv for."""
    t4.run(["apt-get", "-q", "-y", "install", "python3.11-venv"], env=ENV, check=True)
    t4.run(["/usr/bin/python3.11", "-m", "venv", ENV_PATH], check=True)
    with mock.patch("gpuwizard.steps.install_torch.uv_runs", return_value=False):
        planned = plan_on(t4, SetupRequest(variant="cu126", driver_branch="535"))
    first = planned.plan.step("install-torch").actions[0]
    assert isinstance(first, PipInstall) and first.force_reinstall
    broken = {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_RETRIES": "0", "PIP_TIMEOUT": "3"}
    done = t4.run(list(first.command().argv), env=broken, timeout_s=300)
    assert done.returncode != 0, "pip exits 0 with no index: the step would hide a broken index"
    reached = t4.run(list(first.command().argv), timeout_s=600)
    assert reached.returncode == 0, reached.stdout + reached.stderr
    small = t4.run([f"{ENV_PATH}/bin/python", "-m", "pip", "install", "six==1.17.0"], timeout_s=600)
    assert small.returncode == 0, small.stdout + small.stderr


# ------------------------------------------------------------------------------------ B1
@pytest.fixture(scope="module")
def stale(machines: MachineFactory) -> ChrootMachine:
    """A machine still booted on kernel 6.1.0-37, whose headers Debian has dropped."""
    machine = machines("stale-abi", kernel="6.1.0-37-cloud-amd64")
    kernels = machine.root / "lib" / "modules"
    current = next(p for p in kernels.iterdir())
    current.rename(kernels / "6.1.0-37-cloud-amd64")
    machine.run(["apt-get", "-q", "update"], env=ENV, check=True)
    return machine


def test_b1_headers_gone_from_the_archive_plan_the_newest_kernel_and_a_reboot(stale):
    planned = plan_on(stale, SetupRequest(variant="cu126", driver_branch="535"))
    lines = [
        a.command().argv
        for s in planned.plan.steps
        for a in s.actions
        if not isinstance(a, WriteFile)
    ]
    assert not any("linux-headers-6.1.0-37-cloud-amd64" in argv for argv in lines)
    upgrade = planned.plan.step("upgrade-kernel")
    assert "headers are gone from the archive" in upgrade.title
    assert any(
        "linux-headers-cloud-amd64" in a.packages
        for a in upgrade.actions
        if isinstance(a, AptInstall)
    )
    assert planned.plan.step("reboot-kernel").actions, "the new kernel needs its reboot"
    checks = list(check_plan(stale, planned.plan))
    assert all(c.problem is None for c in checks), [c.problem for c in checks if c.problem]


# ------------------------------------------------------------------------------------ B4
def test_b4_the_driver_brings_no_second_kernel_flavour_s_headers(t4):
    planned = plan_on(t4, SetupRequest(variant="cu126", driver_branch="535"))
    driver = planned.plan.step("install-nvidia-driver")
    assert "--no-install-recommends" in driver.why
    for _ in check_plan(t4, planned.plan):  # enable-debian-nonfree for real first
        pass
    install = next(a for a in driver.actions if isinstance(a, AptInstall))
    done = t4.run(["apt-get", "-s", *install.command().argv[1:]], env=ENV, check=True)
    headers = sorted(set(re.findall(r"^Inst (linux-headers-\S+)", done.stdout, re.M)))
    assert headers == [], f"the driver would also pull in {headers}: DKMS would build twice"


# ------------------------------------------------------------------------------------ B5
def test_b5_detection_finds_debian_s_module_names(t4):
    """The names Debian's DKMS packages give the module, read from their dkms.conf."""
    kernel = t4.state()["kernel"]
    facts = facts_of(t4)
    apply_sources_step(t4, step_plan(EnableDebianNonFree("bookworm"), facts))  # the plan's own step
    script = (
        "set -e; cd /tmp; apt-get -q download nvidia-kernel-dkms nvidia-open-kernel-dkms >/dev/null 2>&1; "
        "for deb in *.deb; do dpkg-deb --fsys-tarfile $deb | tar -xO --wildcards '*/dkms.conf' | "
        "sed -n 's/^PACKAGE_NAME=\"\\(.*\\)\"/\\1/p'; done"
    )
    names = t4.sh(script, check=True).stdout.split()
    assert set(names) >= {"nvidia-current", "nvidia-current-open"}, names
    for name in names:
        module = t4.path(f"/lib/modules/{kernel}/updates/dkms/{name}.ko")
        module.parent.mkdir(parents=True, exist_ok=True)
        module.write_bytes(b"")
        assert facts_of(t4).installs.nvidia_module_kernels == (kernel,), name
        module.unlink()


# ------------------------------------------------------------------------------------ B7
def test_b7_the_recorded_debian_host_is_possible_on_a_real_root(t4):
    """Its kernel flavour, loaded modules and Python are what a real Debian 12 root has."""
    recorded, real = recorded_facts(T4), facts_of(t4)
    flavour = re.sub(r"^[\d.]+-\d+-", "", real.boot.kernel)
    assert recorded.boot.kernel.endswith(flavour)
    has_nouveau = any(
        t4.path(f"/lib/modules/{real.boot.kernel}/kernel/drivers/gpu").rglob("nouveau.ko*")
    )
    assert has_nouveau or "nouveau" not in recorded.boot.modules, (
        "nouveau loaded from a kernel that has none"
    )
    assert recorded.python.system_python == real.python.system_python
    assert {p.name for p in recorded.installs.packages} <= {p.name for p in real.installs.packages}


def test_b7_a_dkms_signing_key_needs_no_recorded_mokutil_answer(tmp_path):
    """Debian's dkms makes /var/lib/dkms/mok.pub on its first build; on a machine without
    Secure Boot detection no longer asks mokutil about it (no recording has that answer)."""
    copy = tmp_path / "t4"
    shutil.copytree(profile_dir(T4), copy)
    key = copy / "root" / "var" / "lib" / "dkms" / "mok.pub"
    key.parent.mkdir(parents=True)
    key.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    facts = detect_host(recorded_host(copy))
    assert facts.installs.mok == "unknown"


# ------------------------------------------------------------------------------------ B2
def test_b2_deploy_sh_installs_curl_before_its_first_download(t4):
    """The exported script downloads with curl, which a minimal Debian lacks."""
    assert t4.run(["sh", "-c", "command -v curl"]).returncode != 0, "the image already has curl"
    facts = recorded_facts(T4)
    step = step_plan(InstallPython("debian", planned_env(), "x86_64"), facts)
    plan = Plan(SCHEMA, (dataclasses.replace(step, actions=step.actions[:1]),))
    source = ExportSource(plan, plan_on(t4).selection, facts, version="0.1.0")
    t4.path("/root/deploy.sh").write_text(render_bash(source))
    with timed("defects: deploy.sh fetches uv with curl it installed"):
        # --force: the plan comes from the recorded T4's facts, this root has no GPU (issue 14's
        # host check would refuse it, rightly)
        done = t4.run(["bash", "/root/deploy.sh", "--force"], timeout_s=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "going on (--force)" in done.stdout
    assert t4.path("/opt/gpuwizard/bin/uv").exists()
    assert t4.run(["sh", "-c", "command -v curl"]).returncode == 0


def planned_env():
    from gpuwizard.core.selection import EnvChoice

    return EnvChoice("venv", ENV_PATH, "3.12", "standalone")


# ------------------------------------------------------------------------- the initramfs
def test_the_nouveau_blacklist_reaches_the_initramfs(t4):
    """As planned where nouveau is loaded: the modprobe.d file, then update-initramfs."""
    facts = recorded_facts(T4)
    boot = dataclasses.replace(facts.boot, modules=("nouveau",))
    plan = BlacklistNouveau("debian").plan(dataclasses.replace(facts, boot=boot))
    assert isinstance(plan[0], WriteFile) and isinstance(plan[1], Command)
    target = t4.path(plan[0].path)
    target.write_text(plan[0].content)
    with timed("defects: update-initramfs -u -k all"):
        t4.run(list(plan[1].command().argv), env=dict(APT_ENV), check=True, timeout_s=900)
    kernel = t4.state()["kernel"]
    listed = t4.run(["lsinitramfs", f"/boot/initrd.img-{kernel}"], check=True).stdout
    assert "etc/modprobe.d/gpuwizard-blacklist-nouveau.conf" in listed


def test_nothing_is_left_mounted_by_the_machine(t4):
    t4.run(["true"], check=True)
    mounts = Path("/proc/self/mounts").read_text()
    assert str(t4.root) not in mounts
    assert json.loads((t4.boot / "state.json").read_text())["boot_id"] == t4.boot_id()
