"""A simulated machine as a front end sees it: detection, runner, state and reboot, all inside
the sandbox under the user's state directory."""

from __future__ import annotations

from pathlib import Path

from gpuwizard.core.isolation import ISOLATED, own_python
from gpuwizard.runner.control import Backend
from gpuwizard.sim.machine import sandbox_host
from gpuwizard.sim.reboot import boot_id_of, kill_runner, reboot
from gpuwizard.sim.sandbox import open_or_create, place_for, sim_env


def sim_backend(profile: str, reset: bool = False, home: Path | None = None) -> Backend:
    place = place_for(profile, home)
    sandbox = open_or_create(place, reset)
    runner = (
        *own_python("-m", "gpuwizard.sim.runner"),
        "run",
        "--profile",
        profile,
        "--home",
        str(place.base.parent.parent),
    )

    def confirmed_reboot() -> None:
        ending = boot_id_of(sandbox)
        reboot(sandbox)
        kill_runner(place.state_dir, ending)

    return Backend(
        name=f"simulated {profile}",
        host=lambda: sandbox_host(sandbox),
        state_dir=place.state_dir,
        runner=runner,
        env=sim_env(place),
        reboot=confirmed_reboot,
        simulated=True,
        cli_args=("--simulate", profile),
        # The stand-in gets what the environment's interpreter would: -I first (Machine.python_in).
        python_in=lambda env: (
            *own_python("-m", "gpuwizard.sim.bench_python", "--env", env),
            ISOLATED,
        ),
    )
