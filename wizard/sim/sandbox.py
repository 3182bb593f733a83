"""A simulated host on disk: a private copy of a recorded host that the stand-in tools change.

Layout under the user's state directory (``~/.local/state/gpuwizard/sim/<profile>/``)::

    sandbox/root/           the host's files, copied from the recorded profile
    sandbox/links.json      symlinks as data; never real links, so no write can leave the sandbox
    sandbox/empty_dirs.json
    sandbox/commands.json   recorded answers for probes the simulation does not model
    sandbox/nvml.json, profile.json, scenario.json
    sandbox/sim.json        the simulated machine's mutable state (packages, services, ...)
    sandbox/calls.jsonl     every stand-in call: argv, environment, tty-ness
    state/                  the runner's state directory for this simulated host

A second run finds the sandbox and resumes where the first stopped; ``reset`` starts it over.
Nothing here ever touches the real system: every path is the sandbox's.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuwizard.core.codec import from_jsonable, to_jsonable
from gpuwizard.machine import dpkgdb as dpkg
from gpuwizard.machine import user_state_dir
from gpuwizard.runner.files import write_atomic

SIM_ENV = "GPUWIZARD_SANDBOX"
STATE_ENV = "GPUWIZARD_STATE"


def state_home() -> Path:
    return user_state_dir()


@dataclass(frozen=True)
class SimState:
    """What the stand-in tools have done to the simulated machine."""

    packages: dict[str, str] = field(default_factory=dict)
    held: tuple[str, ...] = ()
    services: tuple[str, ...] = ()
    dpkg_interrupted: bool = False
    cloud_init: str = "done"
    mok: str = "no-key"
    mok_console_matches: bool = False
    """Whether the password given to ``mokutil --import`` is the one the person will type at
    MokManager on the console (the scenario's, else the same). Only this answer is kept: the
    simulation stores no password and no hash of one."""
    initramfs_blacklists_nouveau: bool = False
    """The initramfs was rebuilt while a nouveau blacklist existed."""
    reboots: int = 0
    counters: dict[str, int] = field(default_factory=dict)
    """How often each scenario rule has fired (fail the first N calls)."""


@dataclass(frozen=True)
class Sandbox:
    directory: Path

    @property
    def root(self) -> Path:
        return self.directory / "root"

    @property
    def state_file(self) -> Path:
        return self.directory / "sim.json"

    @property
    def calls(self) -> Path:
        return self.directory / "calls.jsonl"

    def path(self, absolute: str) -> Path:
        parts = [p for p in absolute.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise ValueError(f"path escapes the sandbox: {absolute!r}")
        return self.root.joinpath(*parts)

    def load(self) -> SimState:
        state: SimState = from_jsonable(SimState, json.loads(self.state_file.read_text()))
        return state

    def save(self, state: SimState) -> None:
        write_atomic(self.state_file, json.dumps(to_jsonable(state), indent=1).encode(), 0o600)

    @property
    def has_dpkg(self) -> bool:
        """A Debian-family machine: its packages are dpkg's (``SimHost`` in wizard/sim/machine.py)."""
        return self.path(dpkg.STATUS).is_file()

    def json(self, name: str, default: Any) -> Any:
        path = self.directory / name
        return json.loads(path.read_text()) if path.exists() else default

    def write_json(self, name: str, data: Any) -> None:
        write_atomic(
            self.directory / name, json.dumps(data, indent=1, sort_keys=True).encode(), 0o600
        )

    def links(self) -> dict[str, str]:
        links: dict[str, str] = self.json("links.json", {})
        return links

    def set_link(self, absolute: str, target: str | None) -> None:
        links = self.links()
        if target is None:
            links.pop(absolute, None)
        else:
            links[absolute] = target
        self.write_json("links.json", links)

    def scenario(self) -> dict[str, Any]:
        scenario: dict[str, Any] = self.json("scenario.json", {})
        return scenario


@dataclass(frozen=True)
class SimPlace:
    """Where one simulated host lives: its sandbox and its runner state."""

    profile: str
    base: Path

    @property
    def sandbox(self) -> Sandbox:
        return Sandbox(self.base / "sandbox")

    @property
    def state_dir(self) -> Path:
        return self.base / "state"


def place_for(profile: str, home: Path | None = None) -> SimPlace:
    return SimPlace(profile, (home or state_home()) / "sim" / profile)


def create(place: SimPlace, scenario: dict[str, Any] | None = None) -> Sandbox:
    """Copy the profile into a fresh sandbox (files, not links: nothing can point outside)."""
    # Imported here: every stand-in tool call imports this module, and detection (which
    # profiles pulls in) would add a third to each call's start-up.
    from gpuwizard.machine.detect.installs import read_dpkg
    from gpuwizard.machine.detect.recording import recorded_host
    from gpuwizard.sim.profiles import find_profile

    profile = find_profile(place.profile)
    sandbox = place.sandbox
    if sandbox.directory.exists():
        shutil.rmtree(sandbox.directory)
    shutil.copytree(profile.directory, sandbox.directory, symlinks=False)
    for name in ("commands.json", "links.json", "empty_dirs.json", "nvml.json", "profile.json"):
        source = profile.directory / name
        if not (sandbox.directory / name).exists() and source.exists():
            shutil.copy(source, sandbox.directory / name)
    recorded = read_dpkg(recorded_host(profile.directory))
    initial = SimState(
        packages={e.name: e.version for e in recorded.entries if e.installed},
        held=recorded.held,
        dpkg_interrupted=recorded.interrupted,
        cloud_init=_recorded_cloud_init(sandbox),
    )
    sandbox.save(initial)
    sandbox.write_json("scenario.json", scenario or {})
    return sandbox


def _recorded_cloud_init(sandbox: Sandbox) -> str:
    answer = sandbox.json("commands.json", {}).get("cloud-init status")
    if not answer or answer.get("returncode") == 127:
        return "absent"
    return "running" if "running" in answer.get("stdout", "") else "done"


def open_or_create(place: SimPlace, reset: bool = False) -> Sandbox:
    if reset and place.base.exists():
        shutil.rmtree(place.base)
    if place.sandbox.state_file.exists():
        return place.sandbox
    return create(place)


def sim_env(place: SimPlace) -> dict[str, str]:
    """What the simulated runner and shim need in their environment to find this sandbox."""
    return {SIM_ENV: str(place.sandbox.directory), STATE_ENV: str(place.state_dir)}
