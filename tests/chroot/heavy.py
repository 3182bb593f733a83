"""Heavy chroot tier: the whole install for real in Debian 12 roots, three ways.

Run it as its own command (it is never collected by a plain ``pytest``):

    python -m pytest tests/chroot/heavy.py

On machine A the wizard's own runner first repairs a dpkg that was SIGKILLed mid-unpack (the
plan's repair step), then installs Debian's own driver (real DKMS build, checked with modinfo),
loads it without a reboot, and builds the environment. On machine B the deploy.sh exported from
A's run goes to its reboot stop, continues after the (simulated) reboot, then runs again and
changes nothing; its end state is A's. On machine D a deploy.sh whose dpkg is SIGKILLed
mid-unpack is run again and its repair phase (gw_run --repair) brings dpkg back. On machine C the exported Ansible playbook runs with
--check, then for real, then again reporting no change. Machines E and F run the same Debian plan
on fresh roots with the runner, E step by step and F fetching later steps' downloads beside the
steps (runner/prefetch.py); both wall times and their ratio are printed, and both end the same. PyTorch's index and the GPU cannot be
reached here: torch and torchvision come from stand-in wheels and the verification runs against
them, and both are reported as not checked. Timings are printed at the end.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from gpuwizard.core.plan import APT_ENV
from gpuwizard.core.request import SetupRequest
from gpuwizard.export.ansible import render_ansible
from gpuwizard.export.bash import render_bash
from gpuwizard.export.source import ExportSource
from gpuwizard.runner.journal import Journal
from gpuwizard.runner.layout import EVENTS, JOURNAL, load_planned_facts
from gpuwizard.runner.prefetch import STATE as AHEAD_STATE
from tests.chroot import torch_standin
from tests.chroot.conftest import FIGURES, MachineFactory, not_checked, timed
from tests.chroot.drive import facts_of, plan_on, reboot, run_runner, start_run
from tests.chroot.machine import ChrootMachine
from tests.chroot.roots import REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

AHEAD_FIGURES = REPO / "perf-heavy-ahead.json"
"""The last E/F wall times, which the perf report shows (it is git-ignored)."""
CHOICES = SetupRequest(variant="cu126", driver_branch="535")
"""The build Debian's own R535 runs, and R535 itself: past its end of life, Debian's driver is
installed only when its branch is asked for (a supported branch that fits comes first)."""
HEADERS_COMMON = re.compile(r"^linux-headers-[\d.]+-\d+-common$")
ENV = "/opt/gpuwizard/envs/pytorch"
KILL_MID_UNPACK = r"""
import os, re, signal, subprocess, sys, time
package = sys.argv[1]
apt = subprocess.Popen(["apt-get", "-q", "-y", "install", *sys.argv[2:]],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def latest():
    found = None
    for name in sorted(os.listdir("/var/lib/dpkg/updates"), key=lambda n: int(n) if n.isdigit() else -1):
        if name.isdigit():
            for stanza in open("/var/lib/dpkg/updates/" + name).read().split("\n\n"):
                if ("Package: %s\n" % package) in stanza + "\n":
                    found = stanza
    return found or ""
while apt.poll() is None:
    if "half-installed" in latest():
        for pid in [p for p in os.listdir("/proc") if p.isdigit()]:   # this pid namespace only
            try:
                if open("/proc/%s/comm" % pid).read().strip() == "dpkg":
                    os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
        apt.wait()
        sys.exit(0)
    time.sleep(0.01)
sys.exit("dpkg finished before it could be killed mid-unpack")
"""
OLD_REPAIR = ("dpkg", "--force-confdef", "--force-confold", "--configure", "-a")
KILL_DEPLOY_MID_UNPACK = r"""
import os, signal, subprocess, sys, time
deploy = subprocess.Popen(["bash", *sys.argv[1:]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
def half_installed():
    folder = "/var/lib/dpkg/updates"
    for name in os.listdir(folder) if os.path.isdir(folder) else ():
        if name.isdigit() and "half-installed" in open(os.path.join(folder, name)).read():
            return True
    return False
while deploy.poll() is None:
    if half_installed():
        for pid in [p for p in os.listdir("/proc") if p.isdigit()]:   # this pid namespace only
            try:
                if open("/proc/%s/comm" % pid).read().strip() == "dpkg":
                    os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
        output = deploy.communicate()[0].decode(errors="replace")
        print(output[-3000:])
        sys.exit(0 if deploy.returncode != 0 else "deploy.sh went on after its dpkg was killed")
    time.sleep(0.005)
sys.exit("deploy.sh's dpkg finished before it could be killed mid-unpack")
"""


def offer_torch(machine: ChrootMachine) -> None:
    """PyTorch's index cannot be reached: uv (offline) and pip find stand-in wheels in a
    find-links folder."""
    torch_standin.build(machine.path(torch_standin.FIND_LINKS), "2.14.1", "0.29.1", "cu126")
    machine.path("/etc/pip.conf").write_text(
        torch_standin.PIP_CONF.format(links=torch_standin.FIND_LINKS)
    )
    not_checked(
        "install-torch: torch 2.14.1+cu126, torchvision 0.29.1+cu126 from download.pytorch.org",
        "PyTorch's index cannot be reached here: uv installed stand-in wheels instead",
    )
    not_checked(
        "verify-torch on the GPU",
        "no GPU here: the stand-in torch answered from the simulated boot",
    )


def audit(machine: ChrootMachine) -> str:
    return machine.run(["dpkg", "--audit"], check=False).stdout


def module_path(machine: ChrootMachine, kernel: str) -> str:
    found = sorted(machine.path(f"/lib/modules/{kernel}/updates/dkms").glob("nvidia-current.ko*"))
    assert found, f"no module built for {kernel}"
    return "/" + str(found[0].relative_to(machine.root))


def end_state(machine: ChrootMachine) -> dict[str, object]:
    """What a setup leaves that a second setup must leave the same way."""
    kernel = machine.state()["kernel"]
    packages = machine.run(
        ["dpkg-query", "-W", "-f=${binary:Package}=${Version} ${db:Status-Abbrev}\n"], check=True
    ).stdout
    site = machine.path(f"{ENV}/lib/python3.11/site-packages")
    return {
        "packages": sorted(line for line in packages.splitlines() if line.endswith("ii ")),
        "modules": sorted(
            p.name for p in machine.path(f"/lib/modules/{kernel}/updates/dkms").iterdir()
        ),
        "sources": {
            p.name: p.read_text() for p in machine.path("/etc/apt/sources.list.d").iterdir()
        },
        "modprobe.d": sorted(p.name for p in machine.path("/etc/modprobe.d").iterdir()),
        "site-packages": sorted(
            p.name for p in site.iterdir() if p.name.startswith(("torch", "pip"))
        ),
        "enabled": machine.run(["systemctl", "is-enabled", "nvidia-persistenced"]).stdout.strip(),
        "driver loaded": "nvidia" in machine.state()["modules"],  # type: ignore[operator]
    }


def only_recommended(machine: ChrootMachine, packages: set[str]) -> list[str]:
    """Those of ``packages`` that no installed package depends on (a Recommends only)."""
    names = [p.split("=", 1)[0].split(":", 1)[0] for p in packages]
    flags = ["--installed", "--no-recommends", "--no-suggests", "--no-enhances", "--no-conflicts",
             "--no-breaks", "--no-replaces"]  # fmt: skip
    found = []
    for name in names:
        listed = machine.run(["apt-cache", "rdepends", *flags, name], check=True).stdout.split()
        if listed[listed.index("Reverse") + 2 :] if "Reverse" in listed else []:
            continue
        found.append(name)
    return found


DEPLOY_TOOLS = ("curl", "ca-certificates")
"""What deploy.sh installs for itself where the image lacks it (gw_need_curl): it downloads uv
with curl, where the runner uses gpuwizard-fetch."""


def deploy_tools(machine: ChrootMachine) -> set[str]:
    """DEPLOY_TOOLS and everything they depend on, by name."""
    flags = ["--recurse", "--no-recommends", "--no-suggests", "--no-enhances", "--no-conflicts",
             "--no-breaks", "--no-replaces"]  # fmt: skip
    listed = machine.run(["apt-cache", "depends", *flags, *DEPLOY_TOOLS], check=True).stdout
    return {line.split(":", 1)[0] for line in listed.splitlines() if line and not line[0].isspace()}


def assert_same_end_state(a: ChrootMachine, other: ChrootMachine) -> None:
    """The same setup, except what A's interrupted apt run left out: a Recommends of a package
    it had unpacked before dpkg was killed (manpages-dev from libc6-dev) is never pulled later;
    and the curl deploy.sh installs to download uv with (DEPLOY_TOOLS)."""
    mine, theirs = end_state(a), end_state(other)
    a_packages, other_packages = set(mine.pop("packages")), set(theirs.pop("packages"))  # type: ignore[arg-type]
    assert mine == theirs
    assert not a_packages - other_packages, sorted(a_packages - other_packages)
    tools = deploy_tools(other)
    extra = {
        p for p in other_packages - a_packages if p.split("=", 1)[0].split(":", 1)[0] not in tools
    }
    assert len(only_recommended(other, extra)) == len(extra), sorted(extra)


def digest_tree(machine: ChrootMachine, *folders: str) -> dict[str, str]:
    """Every file under these folders with its content digest and mode (what a rerun may not change)."""
    found = {}
    for folder in folders:
        for path in sorted(machine.path(folder).rglob("*")):
            if path.is_file() and not path.is_symlink() and "__pycache__" not in path.parts:
                data = path.read_bytes()
                found[str(path.relative_to(machine.root))] = (
                    f"{hashlib.sha256(data).hexdigest()} {path.stat().st_mode:o}"
                )
    return found


# ------------------------------------------------------------------------ A: the runner
@pytest.fixture(scope="module")
def a(machines: MachineFactory) -> ChrootMachine:
    machine = machines("A-runner")
    machine.run(["apt-get", "-q", "update"], env=APT_ENV, check=True)
    offer_torch(machine)
    return machine


def test_a_dpkg_killed_mid_unpack_is_left_half_installed(a):
    kernel = str(a.state()["kernel"])
    common = next(
        line.split()[0]
        for line in a.run(
            ["apt-cache", "depends", f"linux-headers-{kernel}"], check=True
        ).stdout.split()
        if HEADERS_COMMON.match(line.split()[0])
    )
    with timed("A: apt-get install of the headers, dpkg SIGKILLed mid-unpack"):
        a.run(
            ["python3", "-c", KILL_MID_UNPACK, common, f"linux-headers-{kernel}"],
            check=True,
            timeout_s=900,
        )
    assert "half-installed" in audit(a) or "reinstalled" in audit(a), audit(a)
    # REAL-ROOT B6: dpkg --configure -a alone exits 0 and leaves it so.
    assert a.run(list(OLD_REPAIR), env=APT_ENV).returncode == 0
    assert audit(a), "dpkg --configure -a alone repaired a half-installed package after all"


def test_a_the_runner_repairs_dpkg_and_installs_debian_s_driver_without_a_reboot(a):
    planned = plan_on(a, CHOICES)
    assert planned.plan.step("repair-dpkg").actions
    assert planned.plan.step("install-nvidia-driver").actions
    start_run(a, planned)
    with timed("A: the runner, repair to verification (DKMS build included)"):
        code = run_runner(a)
    events = (a.state_dir / EVENTS).read_text()
    assert code == 0, events[-4000:]
    assert audit(a) == ""
    states = {r.id: r.state for r in Journal.load(a.state_dir / JOURNAL).data.steps}
    assert states["repair-dpkg"] == "done" and states["load-nvidia-driver"] == "done"
    assert states["reboot"] == "skipped", "the driver loaded without a reboot"
    assert a.state()["reboots"] == 0


def test_a_dkms_built_the_module_once_for_the_running_kernel(a):
    kernel = str(a.state()["kernel"])
    logs = "".join(
        p.read_text(errors="replace") for p in a.state_dir.glob("logs/*/install-nvidia-driver.log")
    )
    assert logs.count("Building initial module for") == 1, "DKMS built more than once (B4)"
    info = a.run(["modinfo", module_path(a, kernel)], check=True).stdout
    assert re.search(r"^version:\s+535\.309\.01$", info, re.M), info
    assert re.search(rf"^vermagic:\s+{re.escape(kernel)} ", info, re.M), info
    facts = facts_of(a)
    assert facts.installs.nvidia_module_kernels == (kernel,), (
        "detection misses Debian's module (B5)"
    )
    assert a.path("/var/lib/dkms/mok.pub").exists() and facts.installs.mok == "unknown"  # B7


def test_a_a_second_plan_has_nothing_left_to_do(a):
    planned = plan_on(a, CHOICES)
    assert [s.id for s in planned.plan.steps if s.actions] == []


# ------------------------------------------------------------------- B: deploy.sh
def exported(a: ChrootMachine) -> ExportSource:
    journal = Journal.load(a.state_dir / JOURNAL).data
    return ExportSource(
        journal.plan, journal.selection, load_planned_facts(a.state_dir), version="0.1.0"
    )


def deploy(machine: ChrootMachine) -> subprocess.CompletedProcess[str]:
    # --force: the hardware comes from a recorded profile, and the root's own /sys shows no GPU
    # to deploy.sh's host check (issue 14); the plan is A's, made on the same image.
    # uv offline against the stand-in wheels, as the runner's shim runs it (torch_standin.UV_ENV)
    return machine.run(
        ["bash", "/root/deploy.sh", "--force"], env=torch_standin.UV_ENV, timeout_s=2400
    )


@pytest.fixture(scope="module")
def b(machines: MachineFactory) -> ChrootMachine:
    machine = machines("B-deploy")
    offer_torch(machine)
    return machine


def test_b_deploy_sh_stops_for_its_reboot_then_finishes_as_the_runner_did(a, b):
    b.path("/root/deploy.sh").write_text(render_bash(exported(a)))
    with timed("B: deploy.sh to its reboot stop (DKMS build included)"):
        first = deploy(b)
    assert first.returncode == 10, first.stdout[-3000:] + first.stderr[-3000:]
    assert "reboot needed" in first.stdout
    before = b.boot_id()
    with timed("B: simulated reboot"):
        assert reboot(b) != before
    assert "nvidia" in b.state()["modules"], "the module built for this kernel loads at boot"
    with timed("B: deploy.sh after the reboot"):
        second = deploy(b)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert_same_end_state(a, b)


def test_b_a_third_run_of_deploy_sh_changes_nothing(b):
    watched = ("/etc", "/opt", "/lib/modules", "/usr/local", "/var/lib/dpkg/status")
    before = digest_tree(b, *watched[:-1]), b.path(watched[-1]).read_bytes()
    with timed("B: deploy.sh once more"):
        again = deploy(b)
    assert again.returncode == 0, again.stdout[-3000:]
    assert again.stdout.count("skip (done before)") >= 5
    assert (digest_tree(b, *watched[:-1]), b.path(watched[-1]).read_bytes()) == before


# ---------------------------------------------------------------------- C: Ansible
def ansible(machine: ChrootMachine, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    inventory = folder / "inventory.ini"
    inventory.write_text(
        "[gpu_servers]\n"
        f"machine-c ansible_connection=gpuwizard_chroot ansible_host={machine.folder} "
        "ansible_become=false ansible_python_interpreter=/usr/bin/python3\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "ANSIBLE_CONNECTION_PLUGINS": str(Path(__file__).parent / "ansible" / "connection_plugins"),
        "ANSIBLE_PIPELINING": "1",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCAL_TEMP": str(folder / "tmp"),
        "ANSIBLE_REMOTE_TMP": "/tmp/.ansible",
        "ANSIBLE_HOST_KEY_CHECKING": "0",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        **torch_standin.UV_ENV,
    }
    playbook = str(Path(os.environ.get("VIRTUAL_ENV", REPO / ".venv")) / "bin" / "ansible-playbook")
    command = [
        playbook if Path(playbook).exists() else "ansible-playbook",
        "-i",
        str(inventory),
        str(folder / "playbook.yml"),
        "-e",
        "gpuwizard_force=true",  # the root's /sys shows no GPU to the host check (see deploy)
        *args,
    ]
    return subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=2400, check=False
    )


def recap(run: subprocess.CompletedProcess[str]) -> dict[str, int]:
    found = re.search(r"machine-c\s*:\s*(.+)$", run.stdout, re.M)
    assert found, run.stdout[-3000:] + run.stderr[-3000:]
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", found.group(1))}


def test_c_the_playbook_checks_applies_and_then_changes_nothing(a, machines, tmp_path):
    c = machines("C-ansible")
    offer_torch(c)
    (tmp_path / "playbook.yml").write_text(render_ansible(exported(a)))
    with timed("C: ansible-playbook --check"):
        check = ansible(c, tmp_path, "--check")
    assert check.returncode == 0, check.stdout[-4000:] + check.stderr[-2000:]
    assert recap(check)["failed"] == 0
    assert not c.path("/opt/gpuwizard").exists(), "--check changed the machine"
    with timed("C: ansible-playbook (DKMS build included)"):
        real = ansible(c, tmp_path)
    assert real.returncode == 0, real.stdout[-4000:] + real.stderr[-2000:]
    assert recap(real)["changed"] > 0 and c.state()["reboots"] == 1
    with timed("C: ansible-playbook once more"):
        again = ansible(c, tmp_path)
    assert again.returncode == 0, again.stdout[-4000:]
    assert recap(again)["changed"] == 0, again.stdout[-4000:]
    assert end_state(c)["modules"] == end_state(a)["modules"]


# ----------------------------------------------------- D: deploy.sh's repair, for real
def test_d_deploy_sh_killed_mid_unpack_repairs_dpkg_when_run_again(machines):
    """Issue 14: deploy.sh finishes an interrupted dpkg before its next apt command. Its own
    ``apt-get install`` of the kernel headers (a large package: the kill lands mid-unpack) is
    SIGKILLed; the rerun runs the runner's repair commands, then the step, and dpkg is clean."""
    d = machines("D-repair")
    d.run(["apt-get", "-q", "update"], env=APT_ENV, check=True)
    planned = plan_on(d, CHOICES)
    headers = planned.plan.step("install-headers")
    assert headers.actions, "the fresh root has no headers for its kernel"
    only_headers = dataclasses.replace(planned.plan, steps=(headers,))
    source = ExportSource(only_headers, planned.selection, planned.facts, version="0.1.0")
    d.path("/root/deploy.sh").write_text(render_bash(source))
    with timed("D: deploy.sh's apt-get install of the headers, dpkg SIGKILLed mid-unpack"):
        killed = d.run(
            ["python3", "-c", KILL_DEPLOY_MID_UNPACK, "/root/deploy.sh", "--force"],
            timeout_s=900,
        )
    assert killed.returncode == 0, killed.stdout[-3000:] + killed.stderr[-3000:]
    assert audit(d), "dpkg was not left interrupted"
    with timed("D: deploy.sh run again: repair, then the step"):
        again = deploy(d)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert (
        "dpkg was left interrupted by an earlier run; running dpkg --configure -a first"
        in again.stdout
    )
    assert audit(d) == ""
    kernel = str(d.state()["kernel"])
    status = d.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}", f"linux-headers-{kernel}"])
    assert status.stdout.strip() == "ii", status.stdout + status.stderr
    with timed("D: deploy.sh once more"):
        third = deploy(d)
    assert third.returncode == 0 and "dpkg was left interrupted" not in third.stdout


# ------------------------------------------- E and F: the same plan, step by step and overlapped
def run_fresh(machines: MachineFactory, name: str, *, ahead: bool) -> tuple[ChrootMachine, float]:
    machine = machines(name)
    offer_torch(machine)
    start_run(machine, plan_on(machine, CHOICES))
    how = "fetching ahead beside the steps" if ahead else "step by step"
    started = time.monotonic()
    with timed(f"{name[0]}: the runner, a fresh root's Debian plan, {how} (DKMS build included)"):
        code = run_runner(machine, ahead=ahead)
    took = time.monotonic() - started
    assert code == 0, (machine.state_dir / EVENTS).read_text()[-4000:]
    return machine, took


def test_e_f_the_plan_fetching_ahead_ends_as_step_by_step_and_both_times_are_printed(machines):
    e, sequential = run_fresh(machines, "E-sequential", ahead=False)
    f, overlapped = run_fresh(machines, "F-overlapped", ahead=True)

    assert [s.id for s in Journal.load(e.state_dir / JOURNAL).data.plan.steps] == [
        s.id for s in Journal.load(f.state_dir / JOURNAL).data.plan.steps
    ]
    assert end_state(e) == end_state(f)
    record = json.loads((f.state_dir / AHEAD_STATE).read_text())["steps"]
    assert record.get("install-nvidia-driver", [""])[0] == "done", record
    assert record.get("install-torch", [""])[0] == "done", record
    FIGURES.append(
        f"the Debian plan on a fresh root: step by step {sequential:.1f} s, fetching ahead "
        f"{overlapped:.1f} s: {sequential / overlapped:.2f}x"
    )
    AHEAD_FIGURES.write_text(  # for python -m tests.perf, which cannot afford to run this
        json.dumps(
            {
                "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "sequential_s": sequential,
                "overlapped_s": overlapped,
                "fetched": sorted(record),
            }
        )
        + "\n"
    )
