"""Quick chroot tier: every package every Debian plan installs exists in the real archive.

For the built-in Debian profile and every plan variant gpuwizard makes there (NVIDIA's
repository or Debian's own driver, with and without every option), planned both from the
recorded profile and from a real Debian 12 root, each ``apt-get install`` line resolves with
``apt-get -s`` and the plan's exact options. Names from NVIDIA's repositories, which cannot be
reached here, are listed as not checked. Debian's own driver rows (recommend/debian_drivers.yaml)
are read back from the archive of each release they name.
"""

from __future__ import annotations

import dataclasses

import pytest

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.ops import AptInstall
from gpuwizard.core.plan import Plan
from gpuwizard.core.request import SetupRequest
from gpuwizard.recommend.debian_native import load_drivers
from tests.chroot import roots
from tests.chroot.archive import ENV, ArchiveView, LineCheck, check_plan
from tests.chroot.conftest import T4, MachineFactory, not_checked, timed
from tests.chroot.drive import facts_of
from tests.chroot.machine import ChrootMachine
from tests.conftest import facts_of as recorded_facts

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

EVERY_PART = {
    "needs_nvcc": True, "cudnn": True, "docker": True, "dcgm": True, "nccl": True,
    "hold_driver": True,
}  # fmt: skip
VARIANTS = [
    pytest.param(SetupRequest(), id="NVIDIA's repository"),
    pytest.param(SetupRequest(**EVERY_PART), id="NVIDIA's repository, every option"),
    pytest.param(SetupRequest(variant="cu126", driver_branch="535"), id="Debian's own driver"),
    pytest.param(
        SetupRequest(variant="cu126", **EVERY_PART), id="Debian's own driver, every option"
    ),
    pytest.param(SetupRequest(driver_branch="535"), id="R535 pinned: Debian's own driver"),
    pytest.param(
        SetupRequest(driver_branch="580", driver_flavour="proprietary", python="3.11"),
        id="R580 proprietary and Python 3.11 pinned",
    ),
]
NONFREE = "/etc/apt/sources.list.d/gpuwizard-debian-nonfree.sources"


REAL_FACTS: dict[str, HostFacts] = {}


@pytest.fixture(scope="module")
def archive(machines: MachineFactory) -> ChrootMachine:
    """A Debian 12 machine whose apt has read the archive once, as any used machine has."""
    machine = machines("archive")
    with timed("archive: apt-get update"):
        machine.run(["apt-get", "-q", "update"], env=ENV, check=True)
    REAL_FACTS["facts"] = facts_of(machine)  # the root as it came, before any plan changed it
    return machine


SEEN: dict[object, LineCheck] = {}


def fresh_sources(machine: ChrootMachine, plan: Plan | None = None) -> None:
    """Back to the image's own sources (main only) before the next plan is checked, unless this
    plan enables Debian's non-free components itself (then the file stays: same content)."""
    keep = plan is not None and any(
        s.id == "enable-debian-nonfree" and s.actions for s in plan.steps
    )
    if machine.path(NONFREE).exists() and not keep:
        machine.path(NONFREE).unlink()
        machine.run(["apt-get", "-q", "update"], env=ENV, check=True)


def plan_for(facts_from: str, machine: ChrootMachine, request: SetupRequest) -> Plan:
    from gpuwizard.recommend.table import load_table
    from gpuwizard.setup.plan import make_plan

    del machine
    facts = recorded_facts(T4) if facts_from == "recorded" else REAL_FACTS["facts"]
    return make_plan(load_table(), facts, request)[0]


def assert_resolves(checks: list[LineCheck]) -> None:
    """The tier's verdict: every line resolved, or named what apt could not find."""
    problems = [f"{c.step}: {' '.join(c.argv)}\n{c.problem}" for c in checks if c.problem]
    assert not problems, "planned packages the archive cannot install:\n" + "\n\n".join(problems)


def report(checks: list[LineCheck]) -> None:
    for check in checks:
        for name, why in check.not_checked.items():
            not_checked(f"package {name} ({check.step})", why)


@pytest.mark.parametrize("facts_from", ["recorded", "real root"])
@pytest.mark.parametrize("request_", VARIANTS)
def test_every_planned_package_is_in_the_archive(archive, facts_from, request_):
    plan = plan_for(facts_from, archive, request_)
    fresh_sources(archive, plan)
    build = request_.variant or (
        f"R{request_.driver_branch} pinned" if request_.driver_branch else "default build"
    )
    label = f"{facts_from} facts, {build}, {'every option' if request_.docker else 'defaults'}"
    with timed(f"archive: every install line resolved ({label})"):
        checks = list(check_plan(archive, plan, SEEN))
    report(checks)
    assert checks, "the plan installs nothing"
    assert_resolves(checks)
    assert any(c.checked for c in checks), "nothing of the plan could be checked"


def test_a_planned_package_that_does_not_exist_fails_the_tier(archive):
    fresh_sources(archive)
    plan = plan_for("recorded", archive, SetupRequest(variant="cu126", driver_branch="535"))
    bogus = "nvidia-kernel-dkms-that-does-not-exist"

    def rename(step):
        actions = tuple(
            dataclasses.replace(
                a, packages=tuple(bogus if w == "nvidia-kernel-dkms" else w for w in a.packages)
            )
            if isinstance(a, AptInstall)
            else a
            for a in step.actions
        )
        return dataclasses.replace(step, actions=actions)

    broken = dataclasses.replace(plan, steps=tuple(rename(s) for s in plan.steps))
    checks = list(check_plan(archive, broken))
    with pytest.raises(AssertionError, match=f"Unable to locate package {bogus}"):
        assert_resolves(checks)


def test_debian_12_driver_row_is_what_the_archive_has(archive):
    """bookworm: the recorded version is the candidate, the proprietary set installs, the open
    module does not (it pins a firmware version the archive no longer has)."""
    fresh_sources(archive)
    row = load_drivers().release("12")
    assert row is not None and not row.open
    plan = plan_for("recorded", archive, SetupRequest(variant="cu126", driver_branch="535"))
    checks = list(check_plan(archive, plan))  # runs the plan's own enable-debian-nonfree
    assert_resolves(checks)
    policy = archive.run(["apt-cache", "policy", "nvidia-kernel-dkms"], env=ENV).stdout
    assert f"Candidate: {row.package_version}" in policy
    opened = archive.run(
        ["apt-get", "-s", "--no-install-recommends", "install", "nvidia-open-kernel-dkms"], env=ENV
    )
    assert opened.returncode != 0, (
        "bookworm's open module installs again: offer it (debian_drivers.yaml)"
    )
    assert "firmware-nvidia-gsp" in opened.stdout + opened.stderr


def test_debian_13_driver_row_is_what_the_archive_has(archive):
    found = roots.mirrors()
    view = ArchiveView(archive, "trixie", found.debian, found.security)
    with timed("archive: trixie lists read"):
        view.update()
    row = load_drivers().release("13")
    assert row is not None
    assert view.candidate("nvidia-kernel-dkms") == row.package_version
    assert view.candidate("nvidia-open-kernel-dkms") == row.package_version
    for flavor in ("proprietary", "open"):
        ok, output = view.installable(list(row.packages(flavor)))
        assert ok, f"trixie's {flavor} driver set does not install:\n{output}"
    assert view.candidate(f"python{'3.13'}-venv") is not None
