"""What the commands that change nothing (bench, export, doctor) need of a machine, real or
simulated, and where a user without root keeps its state.

Unlike the runner's Backend it needs no root: no runner to start and no reboot to make.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gpuwizard.host import Host


@dataclass(frozen=True)
class Machine:
    host: Callable[[], Host]
    state_dir: Path
    """Where the wizard keeps its journal; results go here when it is writable."""
    python_in: Callable[[str], tuple[str, ...]] = lambda env: (f"{env}/bin/python",)
    """argv that runs the Python of the environment at this path."""
    env: Mapping[str, str] = field(default_factory=dict)
    simulated: bool = False


def user_state_dir() -> Path:
    """The per-user state folder (XDG_STATE_HOME/gpuwizard), for what runs without root."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "gpuwizard"
