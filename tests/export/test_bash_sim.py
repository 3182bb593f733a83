"""The exported deploy.sh against the simulated host, beside the wizard's own run of the same
plan (the acceptance test of the bash export, ARCHITECTURE E4).

For each profile: ``gpuwizard apply --yes --simulate P`` runs until done in one sandbox (the real
detached runner, killed by each fake reboot); deploy.sh is rendered from the plan that run
journaled, and runs with ``--reboot`` in a fresh sandbox of the same profile, again after each
exit 10, until done (``gpuwizard.sim.pathshims``). Both machines must end the same: the simulated
machine's state (packages, holds, services, MOK, initramfs, reboots), every file, folder, mode
and symlink under the root (loaded modules, driver bindings and the torch install included), and
the commands run, in order, with their environments. A further run of deploy.sh changes nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gpuwizard.core.request import SetupRequest
from gpuwizard.export.bash import render_bash
from gpuwizard.export.source import ExportSource
from gpuwizard.recommend.table import load_table
from gpuwizard.runner.layout import load_planned_facts
from gpuwizard.setup.plan import make_plan
from gpuwizard.sim.effects import installed_torch
from gpuwizard.sim.pathshims import ScriptRun, make_pathshims, run_script, run_until_done
from gpuwizard.sim.sandbox import Sandbox
from gpuwizard.sim.script_tools import is_helper
from tests.export.conftest import source_for
from tests.sim.conftest import A100, H100, T4_DEBIAN, SimHost

pytestmark = pytest.mark.slow

ENV = "/opt/gpuwizard/envs/pytorch"
MARKERS = "/var/lib/gpuwizard/deploy"
VERIFY = "/var/lib/gpuwizard/verify.json"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
CONTENT_MAY_DIFFER = ("/opt/gpuwizard/bin/uv",)
"""pypi: downloads: the simulated index serves a wheel whose text names its own URL."""
HELPERS = ("curl", "sha256sum")
CANARY = "Pw-c4n4ry-'\"$(touch pwned)`touch pwned`\\-Ä密"


@pytest.fixture
def machines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[str, str], SimHost]]:
    """Two simulated hosts of a profile, "wizard" and "script", each with its own state home."""
    monkeypatch.chdir(tmp_path)
    made: list[SimHost] = []

    def make(profile: str, who: str) -> SimHost:
        home = tmp_path / who / "state" / "gpuwizard"
        monkeypatch.setenv("XDG_STATE_HOME", str(home.parent))
        host = SimHost(profile, home)
        made.append(host)
        return host

    yield make
    leaked = [pid for host in made for pid in host.stop_everything()]
    assert not leaked, f"processes outlived the test and were killed: {leaked}"


def wizard_install(host: SimHost, reboots: int) -> ExportSource:
    """``gpuwizard apply --yes`` after each reboot until done; the plan it ran, as a source."""
    runs = [host.cli("apply", "--yes") for _ in range(reboots + 1)]
    assert [r.returncode for r in runs] == [10] * reboots + [0], runs[-1].stdout + runs[-1].stderr
    journal = host.journal()
    return ExportSource(journal.plan, journal.selection, load_planned_facts(host.state_dir))


def script_install(
    host: SimHost, source: ExportSource, folder: Path, **env: str
) -> list[ScriptRun]:
    script = folder / "deploy.sh"
    script.write_text(render_bash(source, test_build=True), encoding="utf-8")
    return run_until_done(script, host.sandbox, make_pathshims(folder / "bin"), env=env)


def tree(sandbox: Sandbox) -> dict[str, tuple[str, int, str]]:
    """Every path under the root: kind, mode and content digest (what may differ left out)."""
    found = {}
    for path in sorted(sandbox.root.rglob("*")):
        name = "/" + str(path.relative_to(sandbox.root))
        if name in (BOOT_ID, VERIFY) or name.startswith(MARKERS):
            continue
        mode = path.lstat().st_mode & 0o7777
        if path.is_dir():
            found[name] = ("dir", mode, "")
        else:
            same = name not in CONTENT_MAY_DIFFER
            found[name] = (
                "file",
                mode,
                hashlib.sha256(path.read_bytes()).hexdigest() if same else "",
            )
    return found


def final_state(host: SimHost) -> dict[str, object]:
    sandbox = host.sandbox
    verify = json.loads(host.path(VERIFY).read_text())
    assert verify.pop("boot_id") == host.boot_id(), "verified on the final boot"
    return {
        "machine": host.state(),
        "links": sandbox.links(),
        "empty_dirs": sandbox.json("empty_dirs.json", []),
        "tree": tree(sandbox),
        "verify": verify,
    }


def planned_calls(host: SimHost) -> list[tuple[tuple[str, ...], dict[str, str]]]:
    """The stand-in calls the plan's own commands made, in order, with their logged environment.

    The wizard downloads with gpuwizard-fetch; deploy.sh with curl and sha256sum (and python3 for
    a wheel's member or a key's check): those are compared through the files they leave, not here.
    """
    return [
        (call.key, dict(call.env))
        for call in host.calls()
        if call.tool != "gpuwizard-fetch"
        and call.tool not in HELPERS
        and not (call.tool == "python3" and is_helper(list(call.argv[1:])))
        and call.key != ("dpkg", "--audit")  # deploy.sh's look at dpkg; the runner reads its files
    ]


@pytest.mark.parametrize(
    ("profile", "reboots"),
    [
        pytest.param(H100, 1, id="8x H100, Ubuntu 22.04: one driver reboot"),
        pytest.param(
            A100, 2, id="4x A100, Ubuntu 20.04: kernel reboot, driver reboot, uv download"
        ),
    ],
)
def test_deploy_sh_reaches_the_wizards_final_state_and_a_further_run_changes_nothing(
    machines, tmp_path, profile, reboots
):
    wizard = machines(profile, "wizard")
    source = wizard_install(wizard, reboots)
    assert source.plan == source_for(profile).plan, "the exporter's tests render this very plan"

    script = machines(profile, "script")
    runs = script_install(script, source, tmp_path)

    assert [r.code for r in runs] == [10] * reboots + [0], runs[-1].output
    assert "==> done: every step of the plan is finished" in runs[-1].output
    assert planned_calls(script) == planned_calls(wizard), "the same commands, order and env"
    assert final_state(script) == final_state(wizard)
    assert script.state().reboots == reboots
    assert installed_torch(script.sandbox, ENV) == source.selection.torch.version
    assert "nvidia" in script.path("/proc/modules").read_text()

    calls_before, tree_before = script.sandbox.calls.read_text(), tree(script.sandbox)
    markers_before = sorted(p.name for p in script.path(MARKERS).iterdir())
    again = run_script(tmp_path / "deploy.sh", script.sandbox, tmp_path / "bin", ["--reboot"])

    assert again.code == 0, again.output
    starts = [line for line in again.output.splitlines() if line.startswith("==> [")]
    assert starts, again.output
    assert all(line.endswith(": skip (done before)") for line in starts), again.output
    assert script.sandbox.calls.read_text() == calls_before, "no tool ran at all"
    assert tree(script.sandbox) == tree_before
    assert sorted(p.name for p in script.path(MARKERS).iterdir()) == markers_before


def test_a_mok_password_from_the_environment_is_enrolled_and_found_in_no_file(machines, tmp_path):
    host = machines(T4_DEBIAN, "script")
    host.enable_secure_boot()
    host.scenario(mok_console_password_sha256=hashlib.sha256(CANARY.encode()).hexdigest())
    facts = host.facts()
    plan, selection = make_plan(load_table(), facts, SetupRequest())
    assert plan.step("enroll-mok").actions

    runs = script_install(
        host, ExportSource(plan, selection, facts), tmp_path, GPUWIZARD_SECRET_MOK_PASSWORD=CANARY
    )

    assert [r.code for r in runs] == [10, 0], runs[-1].output
    assert host.state().mok == "enrolled", "MokManager at the simulated console accepted it"
    assert "nvidia" in host.path("/proc/modules").read_text()
    leaks = [
        str(path.relative_to(tmp_path))
        for path in tmp_path.rglob("*")
        if path.is_file() and b"c4n4ry" in path.read_bytes()
    ]
    assert leaks == []
    assert not any("c4n4ry" in run.output for run in runs)
    assert not list(tmp_path.rglob("pwned"))
