"""deploy.sh killed in the middle of apt (issue 14): every apt phase first finishes an
interrupted dpkg (dpkg --configure -a, then apt-get -f install when a package is still
half-installed, the runner's own commands), so a rerun reaches the same end as a run that was
never interrupted, on the simulated host (tests/export/test_bash_sim.py shows the harness)."""

from __future__ import annotations

import dataclasses

import pytest

from gpuwizard.sim.pathshims import make_pathshims, run_until_done
from tests.export.conftest import source_for
from tests.export.test_bash_sim import final_state, machines, script_install
from tests.sim.conftest import T4_DEBIAN, SimHost

pytestmark = pytest.mark.slow
__all__ = ["machines"]  # the fixture, shared with test_bash_sim

SIGKILL = 9


def end_state(host: SimHost) -> dict[str, object]:
    """The machine at the end, less the scenario's own call counters."""
    state = final_state(host)
    state["machine"] = dataclasses.replace(host.state(), counters={})
    return state


def test_a_deploy_sh_killed_mid_apt_reruns_to_the_end_of_an_uninterrupted_run(machines, tmp_path):
    source = source_for(T4_DEBIAN)
    plain = machines(T4_DEBIAN, "plain")
    plain_runs = script_install(plain, source, tmp_path / "plain")
    assert [r.code for r in plain_runs] == [10, 0], plain_runs[-1].output

    cut = machines(T4_DEBIAN, "cut")
    cut.scenario(rules=[{"tool": "apt-get", "match": "install", "times": 1, "signal": SIGKILL}])
    killed = script_install(cut, source, tmp_path / "cut")
    assert [r.code for r in killed] == [128 + SIGKILL], killed[-1].output
    assert cut.state().dpkg_interrupted, "the kill left dpkg mid-way, as on a real machine"

    rerun = run_until_done(
        tmp_path / "cut" / "deploy.sh", cut.sandbox, make_pathshims(tmp_path / "cut" / "bin")
    )

    assert [r.code for r in rerun] == [10, 0], rerun[-1].output
    said = rerun[0].output
    assert "dpkg was left interrupted by an earlier run; running dpkg --configure -a first" in said
    assert not cut.state().dpkg_interrupted
    assert end_state(cut) == end_state(plain)
    repairs = [c.key for c in cut.calls() if c.tool == "dpkg" and "--configure" in c.argv]
    assert repairs == [("dpkg", "--force-confdef", "--force-confold", "--configure", "-a")]
