"""What the commands that change nothing (bench, export) need of a machine, real or simulated.

Unlike the runner's Backend it needs no root: no runner to start and no reboot to make.
"""

from __future__ import annotations

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
